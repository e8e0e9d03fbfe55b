"""gthread's ``handle`` and ``handle_request`` for a plain request, as a part of the buffered
worker (router_project/buffered_worker.py).

The request was taken by the lean parser (router_project/lean_http.py); here
it is served as gthread serves one: the same ``pre_request`` and
``post_request`` hooks, count of requests (``max_requests``), keep-alive
rules, access line, and errors (gunicorn's 500 for an application's error
before its answer started, the connection closed after one that had started,
a client gone quietly).
"""

from __future__ import annotations

import errno
import traceback
from datetime import datetime

from gunicorn import util
from gunicorn.config import AccessLogFormat
from gunicorn.glogging import Logger, SafeAtoms

from router_project.lean_http import PlainAnswer, PlainSettings, plain_environ


class PlainExchange:
    """The buffered worker's serving of a plain request (gthread's worker attributes: ``log``,
    ``nr``, ``alive``, ``max_requests``, ``wsgi``..., and ``plain``, its PlainSettings)."""

    def _handle_plain(self, conn, request):
        """gthread's ``handle`` for a request the lean parser took: whether to keep the
        connection, the errors answered as gthread answers them."""
        try:
            conn.sock.setblocking(True)
            return self._handle_plain_request(conn, request)
        except StopIteration:  # the answer had started when the application failed
            return False
        except OSError as error:
            if error.errno not in (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN):
                self.log.exception("Socket error processing request.")
            return False
        except Exception as error:
            self.handle_error(request, conn.sock, conn.client, error)
            return False

    def _handle_plain_request(self, conn, request) -> bool:
        """gthread's ``handle_request``: the same hooks, count of requests, keep-alive
        rules and access line."""
        plain = self.plain
        environ = {}
        answer = None
        try:
            plain.pre_request(self, request)
            started = datetime.now()
            answer = PlainAnswer(request, conn.sock)
            environ = plain_environ(plain, request, answer, conn.sock, conn.client, conn.server)
            self.nr += 1
            if self.nr >= self.max_requests:
                if self.alive:
                    self.log.info("Autorestarting worker after current request.")
                    self.alive = False
                answer.force_close()
            if (
                not self.alive
                or not plain.keepalive
                or len(self.keepalived_conns) >= self.max_keepalived
            ):
                answer.force_close()
            body = self.wsgi(environ, answer.start_response)
            try:
                for item in body:
                    answer.write(item)
                answer.close()
            finally:
                log_access(self.log, plain, answer, request, environ, datetime.now() - started)
                if hasattr(body, "close"):
                    body.close()
            # The body is read already: nothing of it is left on the socket to drain.
            return not answer.should_close()
        except OSError:
            raise
        except (Exception, SystemExit):
            if answer is not None and answer.headers_sent:
                # Writing a 500 after the answer's head would corrupt it.
                self.log.exception("Error handling request")
                util.close_graceful(conn.sock)
                raise StopIteration() from None
            raise
        finally:
            try:
                plain.post_request(self, request, environ, answer)
            except Exception:
                self.log.exception("Exception in post_request hook")


DEFAULT_ACCESS_LOG_FORMAT = AccessLogFormat.default


def log_access(log, settings: PlainSettings, answer, request, environ, request_time):
    """gunicorn's access line. With gunicorn's own logger and format, of the atoms that
    format names alone (gunicorn makes one of every header and environ entry too)."""
    if type(log) is not Logger or settings.access_log_format != DEFAULT_ACCESS_LOG_FORMAT:
        log.access(answer, request, environ, request_time)
        return
    if not log.access_log_enabled:
        return
    status = answer.status
    atoms = {
        "h": environ.get("REMOTE_ADDR", "-"),
        "l": "-",
        "u": log._get_user(environ) or "-",
        "t": log.now(),
        "r": f"{environ['REQUEST_METHOD']} {environ['RAW_URI']} {environ['SERVER_PROTOCOL']}",
        "s": status.split(None, 1)[0] if isinstance(status, str) else status,
        "b": str(answer.sent),
        "f": environ.get("HTTP_REFERER", "-"),
        "a": environ.get("HTTP_USER_AGENT", "-"),
    }
    try:
        log.access_log.info(DEFAULT_ACCESS_LOG_FORMAT, SafeAtoms(atoms))
    except Exception:
        log.error(traceback.format_exc())
