'use strict';
// Serves /up, /env-check and the MCP endpoint on 127.0.0.1:$PORT.
const express = require('express');
const mcp = require('./lib/mcp');

// Values /env-check reports, so a test can see what the boot delivered to the server.
const REPORTED_ENV = ['NODE_ENV', 'APP_GREETING', 'PORT', 'ACTION_AGENT_SANDBOX_SESSION_ID'];
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

const port = Number.parseInt(process.env.PORT || '', 10);
if (!(port > 0 && port < 65536)) {
  console.error('server: PORT must be set to a TCP port');
  process.exit(1);
}

const app = express();
app.disable('x-powered-by');

app.get('/up', (req, res) => res.type('text/plain').send('ok\n'));

// Reports the values of a few harmless variables; for any other name given in ?present=A,B it
// tells only whether the variable is set, never its value.
app.get('/env-check', (req, res) => {
  const env = {};
  for (const name of REPORTED_ENV) env[name] = process.env[name] ?? null;
  const present = {};
  for (const name of String(req.query.present || '').split(',')) {
    if (NAME_RE.test(name)) present[name] = Object.prototype.hasOwnProperty.call(process.env, name);
  }
  res.json({ env, present });
});

app.use(mcp.router());

const server = app.listen(port, '127.0.0.1', () => {
  console.log(`server: listening on http://127.0.0.1:${port}`);
});
server.on('error', (e) => {
  console.error(`server: ${e.message}`);
  process.exit(1);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
