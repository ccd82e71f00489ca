//! The tilesolve worker: holds a pattern database in memory, leases subtree tasks from the
//! coordinator and runs the search kernel on its own threads.
//!
//! Not built yet: the distributed issue fills this crate. It exists now so the workspace has the
//! shape of the design card and the `tilesolve` binary's dependency graph stays acyclic
//! (root library <- coordinator, worker <- cli).
