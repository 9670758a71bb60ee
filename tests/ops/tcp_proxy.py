"""A small TCP proxy on 127.0.0.1, started and stopped by a test to cut a service off.

Stopping it closes the listening socket and every open connection, which is
what a database host going away looks like to the web process, without
touching the PostgreSQL server that other test runs share.
"""

from __future__ import annotations

import socket
import threading


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, *, listen_port: int = 0):
        self.target = (target_host, target_port)
        self.port = listen_port
        self._listener: socket.socket | None = None
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._acceptor: threading.Thread | None = None

    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.2)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._stopping.clear()
        self._acceptor = threading.Thread(target=self._accept_loop, name="tcp-proxy-accept", daemon=True)
        self._acceptor.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._acceptor is not None:
            self._acceptor.join(timeout=5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for sock in self._sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                sock.close()
            self._sockets.clear()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
