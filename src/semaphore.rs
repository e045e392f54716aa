//! Shared semaphores: an exportable `VkSemaphore` imported into CUDA.
//!
//! Timeline values are a contract the library enforces for what goes through it:
//! a signal must be greater than every value signalled through the library before
//! and than the current value, within `maxTimelineSemaphoreValueDifference`.
//!
//! The engine waits on and signals the semaphore in its own submits
//! ([`Semaphore::vk_semaphore`] in `VkTimelineSemaphoreSubmitInfo`); CUDA does on
//! a stream ([`Semaphore::cuda_signal`], [`Semaphore::cuda_wait`]); the host with
//! [`Semaphore::host_signal`] and [`Semaphore::host_wait`].
//!
//! (`no_run`: semaphores need `VK_KHR_external_semaphore_fd`, which the lavapipe
//! of Debian 12 lacks.)
//!
//! ```no_run
//! use std::time::Duration;
//! use vkcuda::context::{Context, CudaChoice};
//! use vkcuda::semaphore::{Kind, Semaphore};
//!
//! # fn main() -> vkcuda::Result<()> {
//! let ctx = Context::standalone(None, CudaChoice::None)?;
//! let sem = Semaphore::create(&ctx, Kind::Timeline, 0, None)?;
//! // One frame's chain: each stage waits for the one before it.
//! let stage = sem.next_stage()?;
//! assert_eq!((stage.wait, stage.signal), (0, 1));
//! sem.host_signal(stage.signal)?;
//! sem.host_wait(1, Duration::from_secs(1))?;
//! assert_eq!(sem.value()?, 1);
//! // Values must strictly increase: signalling 1 again is refused.
//! assert!(sem.host_signal(1).is_err());
//! # Ok(())
//! # }
//! ```

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ash::vk;
use cudarc::driver::sys::{CUgraph, CUgraphExec, CUgraphNode, CUstream};

use super::cuda::external::ExternalSemaphore;
pub use super::cuda::external::GraphOp;
use super::vulkan::semaphore as vksem;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::fd;

/// How long the host wait spins on the counter before it starts sleeping between
/// polls, unless the create info says otherwise.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(1000);

/// The sleep between polls once the spin phase is over (bounded CPU use).
const POLL_SLEEP: Duration = Duration::from_micros(50);

/// The semaphore's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A timeline semaphore (`VK_SEMAPHORE_TYPE_TIMELINE`): a 64-bit counter that
    /// only grows. What the library is made for.
    Timeline,
    /// A binary semaphore, for engines that need one (each signal is waited on
    /// once); CUDA signals and waits with value 0.
    Binary,
}

impl Kind {
    fn vk(self) -> vk::SemaphoreType {
        match self {
            Kind::Timeline => vk::SemaphoreType::TIMELINE,
            Kind::Binary => vk::SemaphoreType::BINARY,
        }
    }
}

/// One step of a frame: wait for `wait`, then signal `signal` when done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The value to wait for (the previous stage's signal).
    pub wait: u64,
    /// The value to signal when this stage is done.
    pub signal: u64,
}

/// The library's book-keeping of the values it handed out and signalled.
/// Usable on its own (the fuzz targets and tests drive it directly).
#[derive(Clone, Debug, Default)]
pub struct Book {
    /// The highest value signalled through the library.
    last_signal: u64,
    /// The highest value handed out by `next_stage`.
    reserved: u64,
    /// Stage values handed out that have not been signalled through the library.
    outstanding: Vec<u64>,
    /// Binary only: a signal was enqueued and not yet waited for.
    binary_pending: bool,
}

impl Book {
    /// A book for a timeline whose value is `initial`.
    pub fn new(initial: u64) -> Self {
        Book {
            last_signal: initial,
            reserved: initial,
            outstanding: Vec::new(),
            binary_pending: false,
        }
    }

    /// Hands out the next stage of the chain: it waits for the previous stage's
    /// signal and signals the value after it.
    pub fn next_stage(&mut self, current: u64, max_difference: u64) -> Result<Stage> {
        let wait = self.reserved;
        let signal = wait.checked_add(1).ok_or_else(|| {
            Error::new(ErrorKind::InvalidState, "the timeline reached UINT64_MAX")
        })?;
        if signal - current.min(signal) > max_difference {
            return Err(Error::new(
                ErrorKind::InvalidState,
                format!(
                    "the next value {signal} would be more than maxTimelineSemaphoreValueDifference \
                     ({max_difference}) ahead of the current value {current}: wait for earlier stages first"
                ),
            ));
        }
        self.reserved = signal;
        self.outstanding.retain(|&v| v > current);
        self.outstanding.push(signal);
        Ok(Stage { wait, signal })
    }

    /// Checks a signal of `value` against the contract and records it.
    pub fn signal(&mut self, value: u64, current: u64, max_difference: u64) -> Result<()> {
        self.check_signal(value, current, max_difference)?;
        self.record_signal(value);
        Ok(())
    }

    /// Checks a signal of `value` against the contract, changing nothing (the
    /// caller records it with [`record_signal`](Self::record_signal) once the
    /// driver took the signal).
    pub fn check_signal(&self, value: u64, current: u64, max_difference: u64) -> Result<()> {
        if value <= self.last_signal {
            return Err(Error::invalid(format!(
                "signal value {value} is not greater than {}, the last value signalled through the library: \
                 timeline values must strictly increase",
                self.last_signal
            )));
        }
        if value <= current {
            return Err(Error::invalid(format!(
                "signal value {value} is not greater than the semaphore's current value {current}: \
                 timeline values must strictly increase"
            )));
        }
        if value - current > max_difference {
            return Err(Error::invalid(format!(
                "signal value {value} is more than maxTimelineSemaphoreValueDifference ({max_difference}) \
                 ahead of the current value {current}"
            )));
        }
        if value <= self.reserved && !self.outstanding.contains(&value) {
            return Err(Error::invalid(format!(
                "signal value {value} was handed out by vkcuda_semaphore_next_stage and already signalled"
            )));
        }
        Ok(())
    }

    /// Records a signal [`check_signal`](Self::check_signal) accepted.
    pub fn record_signal(&mut self, value: u64) {
        if let Some(i) = self.outstanding.iter().position(|&v| v == value) {
            self.outstanding.swap_remove(i);
        }
        self.last_signal = value;
        if value > self.reserved {
            self.reserved = value;
        }
    }

    /// Binary: records a signal; one may be pending at a time.
    pub fn binary_signal(&mut self) -> Result<()> {
        if self.binary_pending {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "the binary semaphore is already signalled and not yet waited on: each signal needs one wait first",
            ));
        }
        self.binary_pending = true;
        Ok(())
    }

    /// Binary: records a wait; it needs a pending signal.
    pub fn binary_wait(&mut self) -> Result<()> {
        if !self.binary_pending {
            return Err(Error::new(
                ErrorKind::InvalidState,
                "the binary semaphore has no pending signal: it was waited on already (one wait per signal) \
                 or never signalled",
            ));
        }
        self.binary_pending = false;
        Ok(())
    }
}

/// A shared semaphore: an exportable `VkSemaphore` (timeline or binary) and its
/// CUDA import. It holds its context; dropping it releases the CUDA import, then
/// the `VkSemaphore`. The caller guarantees that no pending GPU work waits on or
/// signals it then.
///
/// Thread-safety: `Send` and `Sync`; every method may be called from any number
/// of threads at once (the value book-keeping is locked).
pub struct Semaphore {
    ctx: Arc<Context>,
    sem: vk::Semaphore,
    kind: Kind,
    cuda: Option<ExternalSemaphore>,
    book: Mutex<Book>,
    spin: Duration,
}

impl Semaphore {
    /// Creates an exportable semaphore of `kind` (a timeline's counter starts at
    /// `initial`; a binary semaphore's `initial` must be 0) and, unless the
    /// context is Vulkan-only, its CUDA import. `spin`: how long
    /// [`host_wait`](Self::host_wait) spins before it sleeps between polls
    /// (`None`: [`DEFAULT_SPIN`]). Needs `VK_KHR_external_semaphore_fd` on the
    /// device ([`ErrorKind::ExtensionNotPresent`] otherwise).
    pub fn create(
        ctx: &Arc<Context>,
        kind: Kind,
        initial: u64,
        spin: Option<Duration>,
    ) -> Result<Semaphore> {
        // The extension first: without it nothing below can work.
        ctx.vk.semaphore_fd()?;
        if kind == Kind::Binary && initial != 0 {
            return Err(Error::invalid(
                "a binary semaphore's initial_value must be 0",
            ));
        }
        let sem = vksem::create_exportable(&ctx.vk, kind.vk(), initial)?;
        // From here on `out` drops (and destroys what was made) on any error.
        let mut out = Semaphore {
            ctx: ctx.clone(),
            sem,
            kind,
            cuda: None,
            book: Mutex::new(Book::new(initial)),
            spin: spin.unwrap_or(DEFAULT_SPIN),
        };
        if let Some(cuda) = &ctx.cuda {
            let handle = out.export_fd()?;
            out.cuda = Some(ExternalSemaphore::import_fd(
                cuda.clone(),
                handle,
                kind == Kind::Timeline,
            )?);
        }
        Ok(out)
    }

    /// A new fd for the semaphore's payload (`OPAQUE_FD`); the caller owns it.
    /// Whoever holds it can signal and wait on the semaphore.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        vksem::export_fd(&self.ctx.vk, self.sem)
    }

    /// Imports a payload exported by [`export_fd`](Self::export_fd), in this process
    /// or another: a new `VkSemaphore` of `kind` (exportable where the device allows)
    /// whose payload is permanently replaced by the fd's (`vkImportSemaphoreFdKHR`),
    /// and, unless the context is Vulkan-only, a CUDA import. `handle` stays the
    /// caller's: the drivers get duplicates (its file offset, where it has one, is
    /// left where it was). The value book-keeping starts at the
    /// imported timeline's current value (binary: no pending signal); it is this
    /// process's, not shared with the exporter's.
    pub fn import_fd(
        ctx: &Arc<Context>,
        handle: BorrowedFd<'_>,
        kind: Kind,
        spin: Option<Duration>,
    ) -> Result<Semaphore> {
        let _offset = fd::OffsetGuard::new(handle.as_raw_fd());
        let sem = vksem::create_importable(&ctx.vk, kind.vk())?;
        // From here on `out` drops (and destroys what was made) on any error.
        let mut out = Semaphore {
            ctx: ctx.clone(),
            sem,
            kind,
            cuda: None,
            book: Mutex::new(Book::new(0)),
            spin: spin.unwrap_or(DEFAULT_SPIN),
        };
        vksem::import_fd(&ctx.vk, sem, handle)?;
        if kind == Kind::Timeline {
            let current = out.value()?;
            *out.book() = Book::new(current);
        }
        if let Some(cuda) = &ctx.cuda {
            out.cuda = Some(ExternalSemaphore::import_fd(
                cuda.clone(),
                fd::dup_borrowed(handle.as_raw_fd())?,
                kind == Kind::Timeline,
            )?);
        }
        Ok(out)
    }

    /// The `VkSemaphore`, for the engine's submits (owned by this object).
    #[inline]
    pub fn vk_semaphore(&self) -> vk::Semaphore {
        self.sem
    }

    /// Timeline or binary.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn cuda(&self) -> Result<&ExternalSemaphore> {
        match &self.cuda {
            Some(c) => Ok(c),
            None => Err(self
                .ctx
                .cuda()
                .err()
                .unwrap_or_else(|| Error::invalid("no CUDA view"))),
        }
    }

    fn timeline_only(&self, what: &str) -> Result<()> {
        if self.kind != Kind::Timeline {
            return Err(Error::invalid(format!(
                "{what} needs a timeline semaphore; this one is binary"
            )));
        }
        Ok(())
    }

    fn max_difference(&self) -> u64 {
        match self.ctx.vk.props.max_timeline_difference {
            0 => u64::MAX,
            d => d,
        }
    }

    /// The semaphore's current value (`vkGetSemaphoreCounterValue`).
    pub fn value(&self) -> Result<u64> {
        self.timeline_only("reading the value")?;
        vksem::counter_value(&self.ctx.vk, self.sem)
    }

    /// Enqueues a CUDA signal on `stream` (timeline: of `value`, checked against
    /// the value contract; binary: `value` must be 0). `stream` must be a stream
    /// of the context's CUDA context or a default stream (null,
    /// `CU_STREAM_LEGACY`, `CU_STREAM_PER_THREAD`): it is checked
    /// ([`Context::check_stream`]), and a stream being captured is refused (use
    /// [`cuda_graph_add`](Self::cuda_graph_add)).
    pub fn cuda_signal(&self, value: u64, stream: CUstream) -> Result<()> {
        let cuda = self.cuda()?;
        match self.kind {
            Kind::Timeline => {
                let current = self.value()?;
                let mut book = self.book();
                book.check_signal(value, current, self.max_difference())?;
                // Recorded only once enqueued: a refused call can be retried with the value.
                cuda.signal(value, stream)?;
                book.record_signal(value);
                Ok(())
            }
            Kind::Binary => {
                if value != 0 {
                    return Err(Error::invalid(
                        "a binary semaphore is signalled with value 0",
                    ));
                }
                let mut book = self.book();
                book.binary_signal()?;
                cuda.signal(0, stream)
                    .inspect_err(|_| book.binary_pending = false)
            }
        }
    }

    /// Enqueues a CUDA wait on `stream` (timeline: for `value`; binary: `value`
    /// must be 0, and a signal must be pending). `stream` as for
    /// [`cuda_signal`](Self::cuda_signal).
    pub fn cuda_wait(&self, value: u64, stream: CUstream) -> Result<()> {
        let cuda = self.cuda()?;
        match self.kind {
            Kind::Timeline => cuda.wait(value, stream),
            Kind::Binary => {
                if value != 0 {
                    return Err(Error::invalid(
                        "a binary semaphore is waited on with value 0",
                    ));
                }
                let mut book = self.book();
                book.binary_wait()?;
                cuda.wait(0, stream)
                    .inspect_err(|_| book.binary_pending = true)
            }
        }
    }

    /// Adds a wait or signal node of `value` to a CUDA graph, after `dependencies`.
    /// Timeline semaphores only. A signal node's value is checked and recorded as
    /// a signal now (it is what the graph's first launch signals): the same contract
    /// as [`cuda_signal`](Self::cuda_signal).
    ///
    /// # Safety
    /// `graph` is a live `CUgraph` of the context's CUDA context and every
    /// dependency a node of it; none of them is used by another thread during
    /// the call (CUDA graphs are not thread-safe).
    pub unsafe fn cuda_graph_add(
        &self,
        op: GraphOp,
        graph: CUgraph,
        dependencies: &[CUgraphNode],
        value: u64,
    ) -> Result<CUgraphNode> {
        self.timeline_only("a CUDA graph node")?;
        let cuda = self.cuda()?;
        match op {
            GraphOp::Wait => cuda.graph_add(op, graph, dependencies, value),
            GraphOp::Signal => {
                let current = self.value()?;
                let mut book = self.book();
                book.check_signal(value, current, self.max_difference())?;
                let node = cuda.graph_add(op, graph, dependencies, value)?;
                book.record_signal(value);
                Ok(node)
            }
        }
    }

    /// Sets the value a wait or signal node of this semaphore has in the next
    /// launches of an instantiated graph. A signal value is checked and recorded as a
    /// signal now, as for [`cuda_signal`](Self::cuda_signal): set it once per launch.
    ///
    /// # Safety
    /// `exec` is a live `CUgraphExec` instantiated from a graph that has `node`, a
    /// node this semaphore's [`cuda_graph_add`](Self::cuda_graph_add) made with
    /// `op`; `exec` is not used by another thread during the call.
    pub unsafe fn cuda_graph_exec_set(
        &self,
        op: GraphOp,
        exec: CUgraphExec,
        node: CUgraphNode,
        value: u64,
    ) -> Result<()> {
        self.timeline_only("a CUDA graph node")?;
        let cuda = self.cuda()?;
        match op {
            GraphOp::Wait => cuda.graph_exec_set(op, exec, node, value),
            GraphOp::Signal => {
                let current = self.value()?;
                let mut book = self.book();
                book.check_signal(value, current, self.max_difference())?;
                cuda.graph_exec_set(op, exec, node, value)?;
                book.record_signal(value);
                Ok(())
            }
        }
    }

    /// Binary: tells the library the engine put the semaphore in a submit's
    /// signal list (the book-keeping that refuses a second signal before a wait).
    pub fn note_vulkan_signal(&self) -> Result<()> {
        if self.kind != Kind::Binary {
            return Err(Error::invalid(
                "vulkan signal notes are for binary semaphores",
            ));
        }
        self.book().binary_signal()
    }

    /// Binary: tells the library the engine put the semaphore in a submit's wait list.
    pub fn note_vulkan_wait(&self) -> Result<()> {
        if self.kind != Kind::Binary {
            return Err(Error::invalid(
                "vulkan wait notes are for binary semaphores",
            ));
        }
        self.book().binary_wait()
    }

    /// Signals `value` from the host (`vkSignalSemaphore`).
    pub fn host_signal(&self, value: u64) -> Result<()> {
        self.timeline_only("a host signal")?;
        let current = self.value()?;
        let mut book = self.book();
        book.check_signal(value, current, self.max_difference())?;
        vksem::host_signal(&self.ctx.vk, self.sem, value)?;
        book.record_signal(value);
        Ok(())
    }

    /// Hands out the next stage of the chain (see [`Book::next_stage`]).
    pub fn next_stage(&self) -> Result<Stage> {
        self.timeline_only("the frame-pacing helper")?;
        let current = self.value()?;
        self.book().next_stage(current, self.max_difference())
    }

    /// Waits on the host until the value reaches `value`, at most `timeout`:
    /// spins on the counter for the spin time, then polls with short sleeps.
    /// `timeout` zero polls once.
    pub fn host_wait(&self, value: u64, timeout: Duration) -> Result<()> {
        self.timeline_only("a host wait")?;
        let start = Instant::now();
        let deadline = start.checked_add(timeout);
        let spin_end = start + self.spin.min(timeout);
        loop {
            if self.value()? >= value {
                return Ok(());
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "the semaphore did not reach {value} within {} ns (it is at {})",
                        timeout.as_nanos(),
                        self.value()?
                    ),
                ));
            }
            if now < spin_end {
                std::hint::spin_loop();
            } else {
                let left = deadline.map(|d| d - now).unwrap_or(POLL_SLEEP);
                std::thread::sleep(POLL_SLEEP.min(left));
            }
        }
    }

    /// The context the semaphore was made from.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("vk_semaphore", &self.sem)
            .field("kind", &self.kind)
            .finish()
    }
}

impl Drop for Semaphore {
    fn drop(&mut self) {
        self.cuda = None;
        vksem::destroy(&self.ctx.vk, self.sem);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_must_increase() {
        let mut b = Book::new(5);
        assert!(b.signal(5, 5, u64::MAX).is_err());
        assert!(b.signal(4, 0, u64::MAX).is_err());
        b.signal(6, 5, u64::MAX).unwrap();
        let e = b.signal(6, 5, u64::MAX).unwrap_err();
        assert!(e.message.contains("strictly increase"), "{}", e.message);
        // The counter may be ahead of what the library saw (the engine signalled).
        assert!(b.signal(8, 9, u64::MAX).is_err());
        b.signal(10, 9, u64::MAX).unwrap();
        // Too far ahead of the current value.
        let e = b.signal(1000, 10, 100).unwrap_err();
        assert!(
            e.message.contains("maxTimelineSemaphoreValueDifference"),
            "{}",
            e.message
        );
    }

    #[test]
    fn stages_chain_and_are_not_signalled_twice() {
        let mut b = Book::new(0);
        let v = b.next_stage(0, u64::MAX).unwrap();
        assert_eq!(v, Stage { wait: 0, signal: 1 });
        let c = b.next_stage(0, u64::MAX).unwrap();
        assert_eq!(c, Stage { wait: 1, signal: 2 });
        // CUDA signals its stage's value; the Vulkan stage's value 1 is the engine's.
        b.signal(2, 0, u64::MAX).unwrap();
        assert!(b.signal(2, 1, u64::MAX).is_err());
        let n = b.next_stage(2, u64::MAX).unwrap();
        assert_eq!(n, Stage { wait: 2, signal: 3 });
        // A direct signal past the reservations is fine and moves the chain on.
        b.signal(10, 2, u64::MAX).unwrap();
        assert_eq!(
            b.next_stage(10, u64::MAX).unwrap(),
            Stage {
                wait: 10,
                signal: 11
            }
        );
        // The chain may not run more than the allowed difference ahead.
        let mut b = Book::new(0);
        b.next_stage(0, 2).unwrap();
        b.next_stage(0, 2).unwrap();
        assert_eq!(
            b.next_stage(0, 2).unwrap_err().kind,
            ErrorKind::InvalidState
        );
    }

    #[test]
    fn binary_one_wait_per_signal() {
        let mut b = Book::new(0);
        assert_eq!(b.binary_wait().unwrap_err().kind, ErrorKind::InvalidState);
        b.binary_signal().unwrap();
        assert_eq!(b.binary_signal().unwrap_err().kind, ErrorKind::InvalidState);
        b.binary_wait().unwrap();
        let e = b.binary_wait().unwrap_err();
        assert!(e.message.contains("one wait per signal"), "{}", e.message);
    }
}
