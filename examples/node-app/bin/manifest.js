#!/usr/bin/env node
'use strict';
// Mints or reuses the sandbox runtime API key and writes the MCP manifest to the file named by
// $ACTION_AGENT_SANDBOX_MANIFEST: {"mcp_path":"/action_agent/mcp","mcp_token":"aa_..."}.
const fs = require('node:fs');
const { mintOrReuse } = require('../lib/api-key');
const { MCP_PATH } = require('../lib/paths');

const target = process.env.ACTION_AGENT_SANDBOX_MANIFEST;
if (!target) {
  console.error('manifest: ACTION_AGENT_SANDBOX_MANIFEST is not set; it must name the file to write the manifest to');
  process.exit(1);
}

const token = mintOrReuse();
const fd = fs.openSync(target, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC, 0o600);
try {
  fs.writeSync(fd, JSON.stringify({ mcp_path: MCP_PATH, mcp_token: token }));
} finally {
  fs.closeSync(fd);
}
console.log(`manifest: wrote ${target}`);
