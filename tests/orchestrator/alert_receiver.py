"""A webhook receiver for the alerts tests: records every POST (its Baton-Incident header, the
body and what it answered) as one JSON line, answers 500 while FAIL_FLAG exists, 200 otherwise;
while FAIL_FLAG.hang exists it records the request as "hung" and answers only 3 s later (or
as many seconds as the file says). Each
record has the time it arrived ("t", Unix seconds), for the tests' delivery bounds.

usage: alert_receiver.py PORT_FILE LOG_FILE FAIL_FLAG [PORT]
PORT (default 0: any free one) lets a test bring the receiver back on the port it had.
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port_file, log_file, fail_flag = sys.argv[1:4]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        arrived = time.time()
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8", "replace")
        status = 500 if os.path.exists(fail_flag) else 200
        hang = os.path.exists(fail_flag + ".hang")
        record = {"path": self.path, "key": self.headers.get("Baton-Incident"),
                  "content_type": self.headers.get("Content-Type"), "body": body,
                  "status": "hung" if hang else status, "t": arrived}
        with open(log_file, "a") as f:
            f.write(json.dumps(record) + "\n")
        if hang:
            try:
                with open(fail_flag + ".hang") as f:
                    time.sleep(float(f.read().strip() or 3))
            except (OSError, ValueError):
                time.sleep(3)
        try:
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
        except BrokenPipeError:  # the sender gave up on a hung answer, as it should
            pass

    def log_message(self, *args):
        pass


ThreadingHTTPServer.allow_reuse_address = True
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[4]) if len(sys.argv) > 4 else 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
