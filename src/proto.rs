//! Types generated from `proto/tilesolve/v1` by `build.rs`.
//!
//! Only the service layer (coordinator and worker RPC code) may use these; everything else works
//! on the crate's own types so that a protocol change never reaches the search kernel.

/// Package `tilesolve.v1`.
pub mod v1 {
    tonic::include_proto!("tilesolve.v1");
}

/// The encoded file descriptor set of `proto/`, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/tilesolve_descriptor.bin"));

/// Largest gRPC message either side accepts (a batch of 100,000 lines fits easily).
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Most lines a batch may hold; clients split larger files before sending.
pub const MAX_BATCH_LINES: usize = 100_000;

/// Version of the worker protocol this build speaks; a worker with a version outside
/// [`OLDEST_PROTOCOL_VERSION`]..=this is refused at registration. 3: weighted tasks (a worker of
/// version 2 would run one as an optimal search at the task's bound). 4: polls and heartbeats
/// as messages of one `Session` call (a coordinator of version 3 lacks it, and refuses such a
/// worker at registration rather than leaving it to fail at its first poll). 5: a session
/// opened with `WorkerCall.open` is told of tasks to stop or hand back unasked
/// (`WorkerAnswer.told`), and its heartbeats are not held.
pub const PROTOCOL_VERSION: u32 = 5;

/// The oldest worker protocol a coordinator still serves: version 3's unary `Poll` and
/// `Heartbeat` are still answered, and version 4's sessions whose heartbeats are held.
pub const OLDEST_PROTOCOL_VERSION: u32 = 3;

/// A task's outcome as a worker reports it (the coordinator reads it back in its service layer).
impl From<crate::task::TaskOutcome> for v1::task_result::Outcome {
    fn from(outcome: crate::task::TaskOutcome) -> Self {
        use crate::moves::moves_to_string;
        use crate::task::TaskOutcome;
        match outcome {
            TaskOutcome::Found(moves) => Self::Found(moves_to_string(&moves)),
            TaskOutcome::Exceeded(bound) => Self::NextBound(bound),
            TaskOutcome::BudgetSpent(bound) => Self::BudgetSpentAt(bound),
            TaskOutcome::Split {
                children,
                pruned_min_f,
            } => Self::Split(v1::SplitChildren {
                moves: moves_to_string(&children),
                pruned_min_f,
            }),
            TaskOutcome::HandedBack {
                paths,
                searched_min_f,
            } => Self::HandedBack(v1::HandedBack {
                paths: paths.iter().map(|path| moves_to_string(path)).collect(),
                // 0 is no bound a search over one could report.
                searched_min_f: if searched_min_f == u32::MAX {
                    0
                } else {
                    searched_min_f
                },
            }),
            TaskOutcome::Returned => Self::Returned(true),
            TaskOutcome::Weighted(found) => Self::Weighted(match found {
                Some((moves, weight)) => v1::WeightedPath {
                    found: true,
                    moves: moves_to_string(&moves),
                    weight_percent: weight.percent(),
                },
                None => v1::WeightedPath::default(),
            }),
            TaskOutcome::Failed(reason) => Self::Error(reason),
        }
    }
}
