//! Where a process's spans join a distributed trace: the W3C `traceparent` of the current span,
//! sent with every call a client or worker makes ([`crate::connect`]'s interceptor), and taken
//! by the span that serves a call (the coordinator) or runs a task (the worker).
//!
//! This crate knows no tracing backend: the binary that exports traces (over OTLP, when an
//! endpoint is set) installs [`TraceHooks`] once at start. Without them every function here does
//! nothing, so a process that exports no traces sends no `traceparent` and keeps none.

use std::sync::OnceLock;

/// The metadata key of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

/// How to read and set a span's place in a trace, as the exporter sees it.
#[derive(Clone, Copy)]
pub struct TraceHooks {
    /// The current span's `traceparent`, if it is part of a sampled trace.
    pub current: fn() -> Option<String>,
    /// Makes `span` a child of the span `traceparent` names.
    pub adopt: fn(&tracing::Span, &str),
}

static HOOKS: OnceLock<TraceHooks> = OnceLock::new();

/// Installs the hooks (the first installation stays).
pub fn install(hooks: TraceHooks) {
    let _ = HOOKS.set(hooks);
}

/// The current span's `traceparent`, when traces are exported.
pub fn current() -> Option<String> {
    HOOKS.get().and_then(|hooks| (hooks.current)())
}

/// Makes `span` a child of `traceparent`'s span, when traces are exported and one was given.
pub fn adopt(span: &tracing::Span, traceparent: &str) {
    if let Some(hooks) = HOOKS.get() {
        if !traceparent.is_empty() {
            (hooks.adopt)(span, traceparent);
        }
    }
}

/// Whether traces are exported (the hooks are installed).
pub fn enabled() -> bool {
    HOOKS.get().is_some()
}
