#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the model API, for running the real Claude Code CLI in tests.

    model_api.py --script SCRIPT.json --log REQUESTS.jsonl [--port PORT] [--host 127.0.0.1]

Listens on 127.0.0.1:PORT (0, the default, picks a free port); the port is printed on stdout
as the first line once the server accepts connections. Exits 0 on SIGTERM or SIGINT.
Python 3 standard library only.

It answers `POST /v1/messages` (the CLI adds `?beta=true`) the way the Messages API documents
its streamed replies (server-sent events: message_start, content_block_start,
content_block_delta, content_block_stop, message_delta, message_stop), `HEAD /` and `GET /`
with 200, and `POST /v1/messages/count_tokens` with a fixed count. A request with
`"stream": false` gets the same message as one JSON object.

SCRIPT is a JSON list of replies, consumed in order, one per `POST /v1/messages`:
  {"text": "..."}                                  a text block, stop_reason end_turn
  {"tool_use": {"name": "Write", "input": {...}}}  a tool call, stop_reason tool_use: a
      content_block_start with empty input, then the input as input_json_delta chunks
      ("tool_use" may also be a list; "text" and "tool_use" together give a text block first;
       an "id" in the tool call is kept, else one is made up)
  {"error": {"status": 500, "type": "api_error", "message": "..."}}
      that HTTP status with {"type":"error","error":{"type":...,"message":...}};
      with "in_stream": true it is sent as an `error` event after message_start instead
  any of them with "delay": SECONDS   wait that long before answering (cancel/timeout tests)
  any of them with "repeat": N        serve the same reply to the next N requests
When the CLI sends a tool_result back, that is the next POST and takes the next entry. Once the
script is used up each further request gets a 500 api_error saying so.

In reply text and in tool inputs, `{{header:NAME}}` is replaced by the request's header NAME
(for instance x-api-key or authorization), so a test can make the model repeat what it was sent.

Every request is appended to REQUESTS.jsonl as one JSON line, flushed at once:
  {"n": 1, "time": ..., "method": "POST", "path": "/v1/messages?beta=true",
   "headers": {lower-case name: value}, "body": <the parsed JSON body or null>,
   "reply": <index of the script entry served, or null>}
"""

import argparse
import json
import re
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PLACEHOLDER = re.compile(r"\{\{header:([A-Za-z0-9_-]+)\}\}")


class Script:
    def __init__(self, entries):
        if not isinstance(entries, list):
            raise ValueError("the script must be a JSON list")
        self.queue = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict):
                raise ValueError("script entry %d is not an object" % i)
            for _ in range(int(e.get("repeat", 1))):
                self.queue.append((i, e))
        self.lock = threading.Lock()

    def next(self):
        with self.lock:
            if not self.queue:
                return None, None
            return self.queue.pop(0)


class Log:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.n = 0

    def write(self, rec):
        with self.lock:
            self.n += 1
            rec = dict(n=self.n, **rec)
            self.f.write(json.dumps(rec, sort_keys=False) + "\n")
            self.f.flush()


def substitute(value, headers):
    """Replaces {{header:NAME}} in every string inside value."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: headers.get(m.group(1).lower(), ""), value)
    if isinstance(value, list):
        return [substitute(v, headers) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, headers) for k, v in value.items()}
    return value


def chunks(s, size):
    return [s[i:i + size] for i in range(0, len(s), size)] or [""]


def blocks_of(entry, headers):
    """The content blocks of a reply: [("text", str)] / [("tool_use", {id,name,input})]."""
    out = []
    if "text" in entry:
        out.append(("text", substitute(str(entry["text"]), headers)))
    tools = entry.get("tool_use")
    if isinstance(tools, dict):
        tools = [tools]
    for t in tools or []:
        out.append(("tool_use", {
            "id": t.get("id") or "toolu_" + uuid.uuid4().hex[:24],
            "name": t["name"],
            "input": substitute(t.get("input", {}), headers),
        }))
    if not out:
        out.append(("text", ""))
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "model-api-stand-in/1"

    def log_message(self, fmt, *args):  # the JSON log is the record; keep stderr quiet
        pass

    def headers_dict(self):
        return {k.lower(): v for k, v in self.headers.items()}

    def read_body(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return {"_unparsed": raw.decode("utf-8", "replace")}

    def record(self, body, reply):
        self.server.log.write({
            "time": round(time.time(), 3),
            "method": self.command,
            "path": self.path,
            "headers": self.headers_dict(),
            "body": body,
            "reply": reply,
        })

    def send_json(self, status, obj, extra=()):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_HEAD(self):
        self.record(None, None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self):
        self.record(None, None)
        self.send_json(200, {"ok": True})

    def do_POST(self):
        body = self.read_body()
        path = self.path.split("?", 1)[0]
        if path == "/v1/messages/count_tokens":
            self.record(body, None)
            self.send_json(200, {"input_tokens": 10})
            return
        if path != "/v1/messages":
            self.record(body, None)
            self.send_json(404, {"type": "error", "error": {
                "type": "not_found_error", "message": "no such path: " + path}})
            return
        index, entry = self.server.script.next()
        self.record(body, index)
        if entry is None:
            self.send_json(500, {"type": "error", "error": {
                "type": "api_error", "message": "the stand-in's script is used up"}})
            return
        delay = float(entry.get("delay", 0) or 0)
        if delay > 0:
            time.sleep(delay)
        body = body if isinstance(body, dict) else {}
        err = entry.get("error")
        if err is not None and not entry.get("in_stream"):
            self.send_json(int(err.get("status", 500)), {"type": "error", "error": {
                "type": err.get("type", "api_error"),
                "message": err.get("message", "scripted error")}},
                extra=[("x-should-retry", "true")] if err.get("should_retry") else [])
            return
        self.reply(body, entry, err)

    def message(self, body, content, stop_reason):
        return {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-stand-in"),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }

    def reply(self, body, entry, err):
        blocks = blocks_of(entry, self.headers_dict())
        stop = "tool_use" if any(k == "tool_use" for k, _ in blocks) else "end_turn"
        if not body.get("stream"):
            content = [{"type": "text", "text": v} if k == "text" else dict(type="tool_use", **v)
                       for k, v in blocks]
            msg = self.message(body, content, stop)
            msg["usage"]["output_tokens"] = 5
            self.send_json(200, msg)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            self.event("message_start", {"type": "message_start",
                                         "message": self.message(body, [], None)})
            if err is not None:
                self.event("error", {"type": "error", "error": {
                    "type": err.get("type", "api_error"),
                    "message": err.get("message", "scripted error")}})
            else:
                self.event("ping", {"type": "ping"})
                for i, (kind, v) in enumerate(blocks):
                    if kind == "text":
                        self.event("content_block_start", {
                            "type": "content_block_start", "index": i,
                            "content_block": {"type": "text", "text": ""}})
                        for c in chunks(v, 16):
                            self.event("content_block_delta", {
                                "type": "content_block_delta", "index": i,
                                "delta": {"type": "text_delta", "text": c}})
                    else:
                        self.event("content_block_start", {
                            "type": "content_block_start", "index": i,
                            "content_block": {"type": "tool_use", "id": v["id"],
                                              "name": v["name"], "input": {}}})
                        for c in chunks(json.dumps(v["input"]), 24):
                            self.event("content_block_delta", {
                                "type": "content_block_delta", "index": i,
                                "delta": {"type": "input_json_delta", "partial_json": c}})
                    self.event("content_block_stop", {"type": "content_block_stop", "index": i})
                self.event("message_delta", {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5}})
                self.event("message_stop", {"type": "message_stop"})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def event(self, name, data):
        payload = ("event: %s\ndata: %s\n\n" % (name, json.dumps(data))).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser(description="A stand-in for the model API (see the source).")
    ap.add_argument("--script", required=True, help="JSON list of replies")
    ap.add_argument("--log", required=True, help="file the requests are appended to (JSON lines)")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        script = Script(json.load(f))
    srv = Server((a.host, a.port), Handler)
    srv.script = script
    srv.log = Log(a.log)

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(srv.server_address[1], flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except SystemExit:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
