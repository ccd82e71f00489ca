//! The tilesolve coordinator: owns batches, the per-iteration frontier scheduler and the sled
//! store, and serves the `tilesolve.v1` gRPC API.
//!
//! Layout:
//! - [`frontier`]: splits one IDA* iteration of a puzzle into deduplicated subtree tasks.
//! - [`store`]: the sled database (solutions, batches and items, search state); the only
//!   module that touches sled.
//!
//! Still to come (the distributed issue): the scheduler, the gRPC services and `serve`.

pub mod frontier;
pub mod scheduler;
pub mod store;
