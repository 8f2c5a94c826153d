#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the few GitHub REST API calls sandbox-ctl makes (docs/forge.md), on 127.0.0.1.

It follows GitHub's documented requests and answers, and checks against the real git server
of tests/git-server/ (its bare repositories, read with git) what GitHub would check:

  GET  /repos/{owner}/{repo}                        200 {full_name, default_branch, ...}
  POST /repos/{owner}/{repo}/pulls                  201 {number, html_url, head, base, ...};
       401 Bad credentials, 403 Resource not accessible by integration (the token lacks
       pull_requests:write), 404 Not Found, 422 Validation Failed with errors[]: head or base
       not a branch of the repository, "A pull request already exists for OWNER:BRANCH.",
       "No commits between BASE and HEAD"
  GET  /repos/{owner}/{repo}/pulls?head=OWNER:BRANCH&state=open   200 [...]
  POST /app/installations/{id}/access_tokens        201 {token, expires_at, permissions,
       repository_selection, repositories}; the app's JWT (RS256) is verified with its public
       key by `openssl dgst -sha256 -verify`, and its iat, exp and iss checked; a bad one: 401

Every call needs `User-Agent` (403 without, as GitHub) and takes `X-GitHub-Api-Version:
2022-11-28` (400 for another version). Tokens come as `Authorization: Bearer T` or `token T`.

  github_api.py --state DIR --repos REPOS [--owner OWNER] [--prefix /api/v3]
                [--app-id N --public-key PEM --installation N]

DIR holds what the test sets and reads; no secret is ever passed in argv:
  DIR/tokens.json     (read at start, 0600) {"TOKEN": {"contents": "write", ...}, ...}
  DIR/issue-token     (read per call, 0600) the installation token access_tokens hands out;
                      the permissions it was asked for become that token's
  DIR/revoked         (exists: every token is refused with 401 Bad credentials)
  DIR/huge, DIR/slow  (exist: every answer is 2 MiB of JSON; or comes after 10 s) for the
                      client's caps on size and time
  DIR/port            written once listening; DIR/requests.jsonl: one line per request
                      (method, path, query, the headers but never a credential, the body, the
                      JWT's header and claims and whether its signature verified)
"""
import argparse
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOCS = "https://docs.github.com/rest"
API_VERSION = "2022-11-28"
MAX_BODY = 1 << 20


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        with open(os.path.join(args.state, "tokens.json")) as f:
            self.tokens = json.load(f)
        self.pulls = {}  # "owner/repo" -> [pull]
        self.next_number = 1
        self.port = 0

    def path(self, name):
        return os.path.join(self.args.state, name)

    def issue_token(self):
        with open(self.path("issue-token")) as f:
            return f.read().strip()

    def log(self, entry):
        with self.lock, open(self.path("requests.jsonl"), "a") as f:
            f.write(json.dumps(entry) + "\n")

    def bare(self, owner, repo):
        if owner != self.args.owner:
            return None
        p = os.path.join(self.args.repos, repo + ".git")
        return p if os.path.isdir(p) else None


def git(bare, *argv):
    return subprocess.run(["git", "--git-dir", bare, *argv], capture_output=True, text=True)


def branch_sha(bare, branch):
    r = git(bare, "rev-parse", "-q", "--verify", "refs/heads/" + branch + "^{commit}")
    return r.stdout.strip() if r.returncode == 0 else None


def verify_rs256(public_key, signing_input, signature):
    """openssl dgst -sha256 -verify: the signature over the JWT's first two parts."""
    with tempfile.TemporaryDirectory() as d:
        sig = os.path.join(d, "sig")
        with open(sig, "wb") as f:
            f.write(signature)
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", public_key,
                            "-signature", sig], input=signing_input, capture_output=True)
        return r.returncode == 0 and b"Verified OK" in r.stdout


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "github-api-stand-in"

    def log_message(self, fmt, *args):
        pass

    @property
    def st(self):
        return self.server.state

    def answer(self, status, doc, headers=None):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-GitHub-Api-Version-Selected", API_VERSION)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.entry["status"] = status

    def error(self, status, message, errors=None):
        doc = {"message": message, "documentation_url": DOCS, "status": str(status)}
        if errors is not None:
            doc["errors"] = errors
        self.answer(status, doc)

    def credential(self):
        """(scheme, token) from Authorization, or (None, None)."""
        h = self.headers.get("Authorization", "")
        for scheme in ("Bearer ", "token "):
            if h.startswith(scheme):
                return scheme.strip(), h[len(scheme):]
        return None, None

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            return None
        raw = self.rfile.read(n) if n else b""
        self.entry["body_bytes"] = len(raw)
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return None

    def handle_one(self, method):
        u = urllib.parse.urlsplit(self.path)
        path = u.path
        self.entry = {
            "method": method,
            "path": path,
            "query": urllib.parse.parse_qs(u.query),
            "accept": self.headers.get("Accept"),
            "api_version": self.headers.get("X-GitHub-Api-Version"),
            "user_agent": self.headers.get("User-Agent"),
            "content_type": self.headers.get("Content-Type"),
            "auth_scheme": self.credential()[0],
        }
        try:
            self.route(method, path, urllib.parse.parse_qs(u.query))
        finally:
            self.st.log(self.entry)

    def route(self, method, path, query):
        if os.path.exists(self.st.path("slow")):
            time.sleep(10)
        if os.path.exists(self.st.path("huge")):
            return self.answer(200, {"padding": "x" * (2 << 20)})
        prefix = self.st.args.prefix
        if prefix:
            if not path.startswith(prefix + "/"):
                return self.error(404, "Not Found")
            path = path[len(prefix):]
        if not self.headers.get("User-Agent"):
            return self.error(403, "Request forbidden by administrative rules. Please make "
                              "sure your request has a User-Agent header")
        v = self.headers.get("X-GitHub-Api-Version")
        if v and v != API_VERSION:
            return self.error(400, "Unsupported 'X-GitHub-Api-Version' header: " + v)
        parts = path.strip("/").split("/")
        if method == "POST" and len(parts) == 4 and parts[:2] == ["app", "installations"] \
                and parts[3] == "access_tokens":
            return self.access_tokens(parts[2])
        if len(parts) >= 3 and parts[0] == "repos":
            owner, repo = parts[1], parts[2]
            rest = parts[3:]
            perms = self.token_permissions()
            if perms is None:
                return
            bare = self.st.bare(owner, repo)
            if not bare:
                return self.error(404, "Not Found")
            if method == "GET" and not rest:
                return self.repository(owner, repo, bare)
            if rest == ["pulls"] and method == "POST":
                return self.create_pull(owner, repo, bare, perms)
            if rest == ["pulls"] and method == "GET":
                return self.list_pulls(owner, repo, query)
        return self.error(404, "Not Found")

    def token_permissions(self):
        scheme, token = self.credential()
        if not token:
            self.error(401, "Requires authentication")
            return None
        if os.path.exists(self.st.path("revoked")) or token not in self.st.tokens:
            self.error(401, "Bad credentials")
            return None
        return self.st.tokens[token]

    def repository(self, owner, repo, bare):
        head = git(bare, "symbolic-ref", "--short", "HEAD").stdout.strip() or "main"
        self.answer(200, {"id": 1, "name": repo, "full_name": owner + "/" + repo,
                          "private": True, "default_branch": head,
                          "owner": {"login": owner, "type": "Organization"}})

    def create_pull(self, owner, repo, bare, perms):
        if perms.get("pull_requests") != "write":
            return self.error(403, "Resource not accessible by integration")
        body = self.read_body()
        if not isinstance(body, dict):
            return self.error(400, "Problems parsing JSON")
        self.entry["request"] = body
        missing = [k for k in ("title", "head", "base") if not isinstance(body.get(k), str)
                   or not body.get(k)]
        if missing:
            return self.error(422, "Validation Failed", [
                {"resource": "PullRequest", "field": k, "code": "missing_field"}
                for k in missing])
        head = body["head"].split(":", 1)[-1]
        base = body["base"]
        head_sha, base_sha = branch_sha(bare, head), branch_sha(bare, base)
        if not head_sha:
            return self.error(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "head", "code": "invalid"}])
        if not base_sha:
            return self.error(422, "Validation Failed", [
                {"resource": "PullRequest", "field": "base", "code": "invalid"}])
        key = owner + "/" + repo
        with self.st.lock:
            for p in self.st.pulls.get(key, []):
                if p["state"] == "open" and p["head"]["ref"] == head:
                    return self.error(422, "Validation Failed", [
                        {"resource": "PullRequest", "code": "custom",
                         "message": "A pull request already exists for %s:%s." % (owner, head)}])
            if git(bare, "merge-base", "--is-ancestor", head_sha, base_sha).returncode == 0:
                return self.error(422, "Validation Failed", [
                    {"resource": "PullRequest", "code": "custom",
                     "message": "No commits between %s and %s" % (base, head)}])
            number = self.st.next_number
            self.st.next_number += 1
            host = "http://127.0.0.1:%d" % self.st.port
            pull = {
                "url": "%s%s/repos/%s/pulls/%d" % (host, self.st.args.prefix, key, number),
                "id": 1000 + number, "number": number, "state": "open", "locked": False,
                "title": body["title"], "body": body.get("body"),
                "draft": bool(body.get("draft", False)),
                "html_url": "%s/%s/pull/%d" % (host, key, number),
                "head": {"label": owner + ":" + head, "ref": head, "sha": head_sha},
                "base": {"label": owner + ":" + base, "ref": base, "sha": base_sha},
                "user": {"login": "sandbox-app[bot]", "type": "Bot"},
                "created_at": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
            self.st.pulls.setdefault(key, []).append(pull)
        self.answer(201, pull, {"Location": pull["url"]})

    def list_pulls(self, owner, repo, query):
        key = owner + "/" + repo
        head = (query.get("head") or [""])[0]
        state = (query.get("state") or ["open"])[0]
        with self.st.lock:
            out = [p for p in self.st.pulls.get(key, [])
                   if (not head or p["head"]["label"] == head)
                   and (state == "all" or p["state"] == state)]
        self.answer(200, out)

    def jwt_claims(self, token):
        """The JWT's claims when its RS256 signature verifies, else an error message."""
        parts = token.split(".")
        if len(parts) != 3:
            return None, "A JSON web token could not be decoded"
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError:
            return None, "A JSON web token could not be decoded"
        self.entry["jwt_header"] = header
        self.entry["jwt_claims"] = claims
        ok = header.get("alg") == "RS256" and verify_rs256(
            self.st.args.public_key, (parts[0] + "." + parts[1]).encode(), signature)
        self.entry["jwt_verified"] = ok
        if not ok:
            return None, "A JSON web token could not be decoded"
        now = int(time.time())
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or iat > now + 5:
            return None, ("'Issued at' claim ('iat') must be an Integer representing a time "
                          "in the past")
        if not isinstance(exp, int) or exp <= now:
            return None, ("'Expiration time' claim ('exp') must be a numeric value "
                          "representing the future time at which the assertion expires")
        if exp - now > 600 + 5:
            return None, "'Expiration time' claim ('exp') is too far in the future"
        if str(claims.get("iss")) != str(self.st.args.app_id):
            return None, "Integration not found"
        return claims, None

    def access_tokens(self, installation):
        scheme, token = self.credential()
        if scheme != "Bearer" or not token:
            return self.error(401, "A JSON web token could not be decoded")
        claims, msg = self.jwt_claims(token)
        if not claims:
            return self.error(401, msg)
        if installation != str(self.st.args.installation):
            return self.error(404, "Not Found")
        body = self.read_body()
        if not isinstance(body, dict):
            return self.error(400, "Problems parsing JSON")
        self.entry["request"] = body
        names = body.get("repositories", [])
        perms = body.get("permissions", {"contents": "write", "metadata": "read",
                                         "pull_requests": "write"})
        if any(not self.st.bare(self.st.args.owner, n) for n in names):
            return self.error(422, "There is at least one repository that does not exist or "
                              "is not accessible to the parent installation.")
        if not isinstance(perms, dict) or any(v not in ("read", "write")
                                              for v in perms.values()):
            return self.error(422, "Validation Failed", [
                {"resource": "Permissions", "field": "permissions", "code": "invalid"}])
        issued = self.st.issue_token()
        with self.st.lock:
            self.st.tokens[issued] = dict(perms)
        expires = datetime.datetime.utcnow() + datetime.timedelta(hours=1)
        self.answer(201, {
            "token": issued,
            "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": perms,
            "repository_selection": "selected",
            "repositories": [{"id": 1, "name": n, "full_name": self.st.args.owner + "/" + n,
                              "private": True} for n in names],
        })

    def do_GET(self):
        self.handle_one("GET")

    def do_POST(self):
        self.handle_one("POST")

    def do_PATCH(self):
        self.handle_one("PATCH")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--repos", required=True)
    ap.add_argument("--owner", default="t")
    ap.add_argument("--prefix", default="", help="/api/v3 for GitHub Enterprise's shape")
    ap.add_argument("--app-id", default="")
    ap.add_argument("--public-key", default="")
    ap.add_argument("--installation", default="")
    args = ap.parse_args()
    args.prefix = args.prefix.rstrip("/")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    server.state.port = server.server_address[1]
    with open(os.path.join(args.state, "port.tmp"), "w") as f:
        f.write(str(server.state.port))
    os.rename(os.path.join(args.state, "port.tmp"), os.path.join(args.state, "port"))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
