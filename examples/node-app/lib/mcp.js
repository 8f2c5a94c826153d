'use strict';
// A minimal MCP (JSON-RPC 2.0 over streamable HTTP) endpoint: bearer authentication first,
// then 405 for anything but POST, then `initialize`, `ping` and `tools/list`.
const express = require('express');
const { authenticate } = require('./api-key');
const { MCP_PATH } = require('./paths');

const PROTOCOL_VERSION = '2025-03-26';
const SERVER_INFO = { name: 'node-app', version: '1.0.0' };

function requireBearer(req, res, next) {
  const match = /^Bearer +(\S+)$/.exec(req.get('authorization') || '');
  if (match && authenticate(match[1])) return next();
  res.set('WWW-Authenticate', 'Bearer realm="action_agent"');
  return res.status(401).json({ error: 'unauthorized' });
}

function rpcError(res, id, code, message, status = 200) {
  return res.status(status).json({ jsonrpc: '2.0', id, error: { code, message } });
}

function answer(res, message) {
  const { id } = message;
  switch (message.method) {
    case 'initialize': {
      const params = message.params && typeof message.params === 'object' ? message.params : {};
      return res.json({
        jsonrpc: '2.0',
        id,
        result: {
          protocolVersion: params.protocolVersion || PROTOCOL_VERSION,
          capabilities: { tools: {} },
          serverInfo: SERVER_INFO,
        },
      });
    }
    case 'ping':
      return res.json({ jsonrpc: '2.0', id, result: {} });
    case 'tools/list':
      return res.json({ jsonrpc: '2.0', id, result: { tools: [] } });
    default:
      return rpcError(res, id, -32601, 'Method not found');
  }
}

function handle(req, res) {
  if (req.method !== 'POST') return res.set('Allow', 'POST').status(405).end();
  let message;
  try {
    message = JSON.parse(typeof req.body === 'string' ? req.body : '');
  } catch (e) {
    return rpcError(res, null, -32700, 'Parse error', 400);
  }
  if (!message || typeof message !== 'object' || Array.isArray(message)) {
    return rpcError(res, null, -32600, 'Invalid Request', 400);
  }
  if (!('id' in message)) return res.status(202).end(); // a notification gets no answer
  return answer(res, message);
}

function router() {
  const r = express.Router();
  r.all(MCP_PATH, requireBearer, express.text({ type: () => true, limit: '1mb' }), handle);
  return r;
}

module.exports = { MCP_PATH, router };
