'use strict';
// The sandbox runtime API key: minted once, kept in data/api-key.json (mode 0600, in a 0700
// directory), reused by every later manifest run so a restarted server keeps its token.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const NAME = 'Checkout sandbox runtime';
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const TOKEN_RE = /^aa_[1-9A-HJ-NP-Za-km-z]{32}$/;

const DATA_DIR = path.join(__dirname, '..', 'data');
const KEY_FILE = path.join(DATA_DIR, 'api-key.json');

function generateToken() {
  let out = 'aa_';
  for (let i = 0; i < 32; i++) out += BASE58[crypto.randomInt(BASE58.length)];
  return out;
}

// Returns the stored token, or null when there is none (or it is not a token).
function readToken() {
  let text;
  try {
    text = fs.readFileSync(KEY_FILE, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return null;
    throw e;
  }
  const record = JSON.parse(text);
  return record && typeof record.token === 'string' && TOKEN_RE.test(record.token)
    ? record.token
    : null;
}

function mintOrReuse() {
  const existing = readToken();
  if (existing) return existing;

  fs.mkdirSync(DATA_DIR, { recursive: true, mode: 0o700 });
  const token = generateToken();
  const record = { name: NAME, token, created_at: new Date().toISOString() };
  const tmp = path.join(DATA_DIR, `.api-key.${process.pid}.tmp`);
  fs.writeFileSync(tmp, JSON.stringify(record) + '\n', { mode: 0o600, flag: 'wx' });
  fs.renameSync(tmp, KEY_FILE);
  return token;
}

function digest(text) {
  return crypto.createHash('sha256').update(text).digest();
}

// Constant-time comparison of a presented bearer token with the stored one.
function authenticate(presented) {
  const token = readToken();
  if (!token || typeof presented !== 'string') return false;
  return crypto.timingSafeEqual(digest(presented), digest(token));
}

module.exports = { NAME, TOKEN_RE, generateToken, readToken, mintOrReuse, authenticate };
