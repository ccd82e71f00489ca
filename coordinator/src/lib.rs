//! The tilesolve coordinator: owns batches, the per-iteration frontier scheduler and the sled
//! store, and serves the `tilesolve.v1` gRPC API.
//!
//! Not built yet: the distributed issue fills this crate. It exists now so the workspace has the
//! shape of the design card and the `tilesolve` binary's dependency graph stays acyclic
//! (root library <- coordinator, worker <- cli).
