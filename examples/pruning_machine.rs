//! The move-pruning machine: `cargo run --release --example pruning_machine -- [MAX_DEPTH]`
//! prints its size and making time by word length; `-- --words DEPTH` prints the forbidden
//! words of up to DEPTH moves in the format of `src/search/forbidden-words.txt`.

use std::time::Instant;

use tilesolve::search::MovePruning;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--words") {
        let depth: u32 = args.get(1).and_then(|d| d.parse().ok()).unwrap_or(14);
        println!("# Forbidden move words of up to {depth} moves (src/search/pruning.rs).");
        for word in MovePruning::forbidden_words(depth) {
            println!("{word}");
        }
        return;
    }
    let max: u32 = args.first().and_then(|arg| arg.parse().ok()).unwrap_or(14);
    println!("depth  forbidden words  states  seconds");
    for depth in (2..=max).step_by(2) {
        let started = Instant::now();
        let machine = MovePruning::generate(depth);
        println!(
            "{depth:5}  {:15}  {:6}  {:7.3}",
            machine.words(),
            machine.states(),
            started.elapsed().as_secs_f64()
        );
    }
}
