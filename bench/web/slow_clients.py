#!/usr/bin/env python3
"""Slow clients against a running `baton serve`: opens N connections from another loopback
address (127.0.0.2, another client to the server) that send nothing, then times a real request
from 127.0.0.1 while they are open. Prints
  slow clients: N idle connections, a real request answered in X ms

usage: slow_clients.py BASE_URL N PATH
"""
import socket
import sys
import time
import urllib.parse


def main():
    base, n, path = sys.argv[1].rstrip("/"), int(sys.argv[2]), sys.argv[3]
    u = urllib.parse.urlparse(base)
    idle = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.2", 0))
        s.connect((u.hostname, u.port))
        idle.append(s)
    time.sleep(0.2)  # every one accepted and waiting for its request
    t0 = time.perf_counter()
    real = socket.create_connection((u.hostname, u.port), timeout=30)
    real.sendall(f"GET {path} HTTP/1.1\r\nHost: {u.hostname}\r\nConnection: close\r\n\r\n".encode())
    head = real.recv(64)
    ms = (time.perf_counter() - t0) * 1000
    status = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "no answer"
    print(f"   slow clients: {n} idle connections, a real request answered in {ms:.1f} ms"
          f" (status {status})")
    for s in idle:
        s.close()
    real.close()


if __name__ == "__main__":
    main()
