"""Batches made ahead in a background thread, in pinned memory when they go to a GPU.

:class:`Prefetcher` wraps a :class:`~runtime.batching.BatchStream` with the same interface
(``next``, ``state_dict``, ``load_state_dict``, ``epoch_progress``): a thread cuts, gathers
and pads the next ``depth`` batches (and pins them for CUDA: :func:`pinned`) while the
device computes, so the copy ``batch.to(device)`` (non-blocking) starts at once. The
position it reports and saves is that of the batches handed out, not of those made ahead,
so a checkpoint resumes exactly where the training was.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import torch

from adl.runtime.data.batching import Batch, BatchStream


def pinned(batch: Batch, device: torch.device) -> Batch:
    """``batch`` in page-locked host memory when ``device`` is CUDA (the host-to-device copy
    is then asynchronous: ``Batch.to`` copies with ``non_blocking=True``); else as it is."""
    if device.type != "cuda":
        return batch
    words = batch.src_words
    return Batch(
        batch.ids,
        batch.src.pin_memory(),
        batch.tgt_in.pin_memory(),
        batch.tgt_out.pin_memory(),
        None if words is None else words.pin_memory(),
    )


class Prefetcher:
    """A :class:`BatchStream` read ``depth`` batches ahead by a background thread."""

    def __init__(self, stream: BatchStream, device: torch.device, depth: int = 2):
        self.stream, self.device, self.depth = stream, device, depth
        self._queue: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._state = stream.state_dict()  # the position after the last batch handed out
        self._progress = 0.0
        self._progress_known = False

    # --- the stream's interface ------------------------------------------------------------
    def __iter__(self) -> Prefetcher:
        return self

    def __next__(self) -> Batch:
        if self.depth <= 0:  # no thread: batches are made on demand
            batch = pinned(next(self.stream), self.device)
            self._state, self._progress = self.stream.state_dict(), self.stream.epoch_progress
            self._progress_known = True
            return batch
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="adl-prefetch", daemon=True)
            self._thread.start()
        item = self._queue.get()
        if isinstance(item, BaseException):
            self.close()
            raise item
        batch, self._state, self._progress = item
        self._progress_known = True
        return batch

    def state_dict(self) -> dict:
        return dict(self._state)

    def load_state_dict(self, state: dict) -> None:
        if self._thread is not None:
            raise RuntimeError("load_state_dict before the first batch is drawn")
        self.stream.load_state_dict(state)
        self._state = self.stream.state_dict()
        self._progress_known = False

    @property
    def epoch_progress(self) -> float:
        if not self._progress_known:  # nothing handed out yet: the stream is where we are
            return self.stream.epoch_progress
        return self._progress

    # --- the thread ------------------------------------------------------------------------
    def _work(self) -> None:
        try:
            while not self._stop.is_set():
                batch = pinned(next(self.stream), self.device)
                item: Any = (batch, self.stream.state_dict(), self.stream.epoch_progress)
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as exc:  # handed to the main thread at its next batch
            self._queue.put(exc)

    def close(self) -> None:
        """Stop the thread (batches made ahead are dropped)."""
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    pass
                self._thread.join(timeout=0.1)
