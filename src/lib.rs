//! tilesolve: optimal solutions to sliding-tile puzzles (8-, 15- and 24-puzzle, and rectangles
//! of up to 32 cells).
//!
//! This is the shared library of the workspace. Layout:
//!
//! - [`board`]: a validated board, goals, and the solvability (parity) check.
//! - [`direction`]: the four moves of the blank (depends on nothing).
//! - [`parse`]: board text in its three forms, and goals by name, with errors that name the
//!   column.
//! - [`batch_file`]: lines of a batch file: comments, blank lines, ` # ` facts.
//! - [`moves`]: the neighbour table the kernel walks, and solution replay.
//! - [`heuristic`]: Hamming, Manhattan and linear conflict, each updated move by move.
//! - [`heuristic_choice`]: a heuristic named at run time (`default` by memory budget), parsed
//!   once at the edge, and built.
//! - [`pdb`]: pattern databases: the presets' registry, the parallel builder, files, the
//!   additive heuristic.
//! - [`search`]: the bounded depth-first kernel, IDA* around it, and A* with a memory budget.
//! - [`solver`]: one board in, one replayed optimal solution (or a clear error) out.
//! - [`task`]: the unit of distributed work (one subtree under one bound) and how to run it.
//! - [`time_scale`]: the policy's times stretched for a process held to a fraction of a core,
//!   emulating a many-core host on a few cores.
//! - [`proto`]: generated `tilesolve.v1` gRPC types, for the service layer only.
//! - [`connect`]: reaching a coordinator: address, bearer token, TLS, and the trace context.
//! - [`worker_session`]: a worker's polls and heartbeats as messages of one `Workers/Session`
//!   call.
//! - [`trace_context`]: the W3C `traceparent` carried with calls and tasks, when the binary
//!   exports traces.
//! - [`process_stats`]: the process's CPU, memory and descriptors, and a disk's free space, for
//!   the `process_*` metrics.
//!
//! The coordinator and worker crates build on this; the `tilesolve` binary lives in `cli/`.

pub mod batch_file;
pub mod board;
pub mod connect;
pub mod direction;
pub mod excerpt;
pub mod heuristic;
pub mod heuristic_choice;
pub mod moves;
pub mod parse;
pub mod pdb;
pub mod process_stats;
pub mod proto;
pub mod search;
pub mod solver;
pub mod task;
pub mod time_scale;
pub mod trace_context;
pub mod worker_session;

pub use board::{Board, BoardError, Goal, Shape};
pub use direction::Direction;
pub use heuristic::HeuristicKind;
pub use parse::{parse_board, parse_board_in};
pub use solver::{Algorithm, Solution, SolveError, SolveOptions, Solver};
