#!/usr/bin/env python3
"""Writes a batch file of distinct 15-puzzles made by random walks from the blank-last goal.

usage: scripts/random-walks.py COUNT MIN_MOVES MAX_MOVES SEED > batch.txt

Each walk never undoes its previous move; boards repeated or equal to the goal are skipped.
The same arguments always give the same file (BENCHMARKS.md uses 10000 40 60 19).
"""
import random
import sys


def main():
    count, low, high, seed = (int(arg) for arg in sys.argv[1:5])
    rng = random.Random(seed)
    neighbours = {}
    for cell in range(16):
        row, col = divmod(cell, 4)
        near = []
        if row > 0:
            near.append(cell - 4)
        if col > 0:
            near.append(cell - 1)
        if col < 3:
            near.append(cell + 1)
        if row < 3:
            near.append(cell + 4)
        neighbours[cell] = near
    goal = ",".join(map(str, list(range(1, 16)) + [0]))
    seen = set()
    print(f"# {count} distinct random walks of {low}-{high} moves from the blank-last goal (seed {seed})")
    while len(seen) < count:
        tiles = list(range(1, 16)) + [0]
        blank, previous = 15, -1
        moves = rng.randint(low, high)
        for _ in range(moves):
            cell = rng.choice([c for c in neighbours[blank] if c != previous])
            tiles[blank], tiles[cell] = tiles[cell], tiles[blank]
            previous, blank = blank, cell
        board = ",".join(map(str, tiles))
        if board == goal or board in seen:
            continue
        seen.add(board)
        print(f"{board} # id={len(seen)} walk={moves}")


if __name__ == "__main__":
    main()
