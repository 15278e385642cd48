//! The trace's output thread: lines gathered into chunks and written through a bounded
//! queue, so a reader that stops reading holds the queue, never the event loop.

use crate::{Error, Result};

/// Bytes of lines sent to the writer thread at a time. One line a message cost a
/// channel handoff (a futex wake, often a context switch) per event: at 200,000 events a
/// second the handoffs, not the formatting, were most of the reader's time.
const CHUNK_BYTES: usize = 16 << 10;
/// Chunks the writer thread may have queued: about a pipe's worth (64 KiB).
const QUEUED_CHUNKS: usize = 4;

/// The trace's output, written on its own thread through a bounded queue of chunks of
/// lines: a reader that stops reading (a full pipe) holds the queue, never the event loop,
/// which goes on reading the process announcements (the memory maps that name user stacks)
/// while the records wait in their ring buffer (where the kernel counts what does not fit).
/// Lines are gathered until a chunk is full or the rings are caught up ([`Writer::flush`]),
/// so a quiet trace prints each line as soon as it is read.
pub(super) struct Writer {
    chunks: Option<std::sync::mpsc::SyncSender<String>>,
    /// Lines not yet sent.
    gathered: String,
    /// A chunk the full queue did not take.
    pending: Option<String>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Writer {
    /// Starts the thread writing to `out`; it flushes whenever the queue runs empty.
    pub(super) fn spawn(mut out: Box<dyn std::io::Write + Send>) -> Result<Self> {
        let (chunks, queue) = std::sync::mpsc::sync_channel::<String>(QUEUED_CHUNKS);
        let thread = std::thread::Builder::new()
            .name("tracekit-out".into())
            .spawn(move || {
                while let Ok(chunk) = queue.recv() {
                    out.write_all(chunk.as_bytes())?;
                    while let Ok(chunk) = queue.try_recv() {
                        out.write_all(chunk.as_bytes())?;
                    }
                    out.flush()?;
                }
                out.flush()
            })
            .map_err(|err| Error::runtime(format!("starting the output thread: {err}")))?;
        Ok(Self {
            chunks: Some(chunks),
            gathered: String::with_capacity(CHUNK_BYTES + 1024),
            pending: None,
            thread: Some(thread),
        })
    }

    /// Adds `line`: Ok(false) when its chunk is full and the queue could not take it (the
    /// chunk waits until [`Writer::ready`]); the write's error once the thread has stopped
    /// on one.
    pub(super) fn offer(&mut self, line: &str) -> std::io::Result<bool> {
        debug_assert!(self.pending.is_none());
        self.gathered.push_str(line);
        if self.gathered.len() < CHUNK_BYTES {
            return Ok(true);
        }
        self.flush()
    }

    /// Sends the lines gathered so far: Ok(false) when the queue is full (they wait until
    /// [`Writer::ready`]).
    pub(super) fn flush(&mut self) -> std::io::Result<bool> {
        if self.pending.is_some() || self.gathered.is_empty() {
            return Ok(self.pending.is_none());
        }
        let Some(chunks) = &self.chunks else {
            return Err(self.stopped());
        };
        let chunk = std::mem::replace(
            &mut self.gathered,
            String::with_capacity(CHUNK_BYTES + 1024),
        );
        match chunks.try_send(chunk) {
            Ok(()) => Ok(true),
            Err(std::sync::mpsc::TrySendError::Full(chunk)) => {
                self.pending = Some(chunk);
                Ok(false)
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => Err(self.stopped()),
        }
    }

    /// Whether the queue took the waiting chunk (with `wait`, once it has).
    pub(super) fn ready(&mut self, wait: bool) -> std::io::Result<bool> {
        let (Some(chunk), Some(chunks)) = (self.pending.take(), &self.chunks) else {
            return Ok(true);
        };
        let sent = if wait {
            chunks.send(chunk).map_err(|_| ())
        } else {
            match chunks.try_send(chunk) {
                Ok(()) => Ok(()),
                Err(std::sync::mpsc::TrySendError::Full(chunk)) => {
                    self.pending = Some(chunk);
                    return Ok(false);
                }
                Err(std::sync::mpsc::TrySendError::Disconnected(_)) => Err(()),
            }
        };
        match sent {
            Ok(()) => Ok(true),
            Err(()) => Err(self.stopped()),
        }
    }

    /// Writes what is gathered and queued and waits for the thread: the first write error.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        self.ready(true)?;
        if !self.flush()? {
            self.ready(true)?;
        }
        self.chunks = None;
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the output thread panicked")),
            None => Ok(()),
        }
    }

    /// The error the thread stopped on.
    fn stopped(&mut self) -> std::io::Error {
        self.pending = None;
        self.gathered.clear();
        self.chunks = None;
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(Err(err))) => err,
            Some(Err(_)) => std::io::Error::other("the output thread panicked"),
            _ => std::io::Error::other("the output thread stopped"),
        }
    }
}
