'use strict';
// Where the MCP endpoint is mounted; the manifest points clients at it.
module.exports = { MCP_PATH: '/action_agent/mcp' };
