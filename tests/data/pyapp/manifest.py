#!/usr/bin/python3
# Mints a token once (data/key.json) and writes the manifest to $ACTION_AGENT_SANDBOX_MANIFEST.
import json
import os
import secrets

os.makedirs("data", exist_ok=True)
try:
    token = json.load(open("data/key.json"))["token"]
except FileNotFoundError:
    token = "aa_" + secrets.token_hex(16)
    fd = os.open("data/key.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, json.dumps({"token": token}).encode())
    os.close(fd)
with open(os.environ["ACTION_AGENT_SANDBOX_MANIFEST"], "w") as f:
    json.dump({"mcp_path": "/mcp", "mcp_token": token}, f)
print("manifest written")
