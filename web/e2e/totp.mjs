// RFC 6238 TOTP (HMAC-SHA-1, 30 s steps), computed by the browser tests from
// an enrolment secret, as an authenticator app would.
import { createHmac } from 'node:crypto';

/** Decodes RFC 4648 base32 (no padding needed, case-insensitive). */
export function base32(s) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = 0;
  let value = 0;
  const out = [];
  for (const c of s.replace(/=+$/, '').toUpperCase()) {
    const i = alphabet.indexOf(c);
    if (i < 0) throw new Error(`not base32: ${c}`);
    value = (value << 5) | i;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** The code for `key` (bytes) at Unix time `seconds`. */
export function totp(key, seconds = Date.now() / 1000, digits = 6, step = 30) {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(seconds / step)));
  const mac = createHmac('sha1', key).update(counter).digest();
  const off = mac[mac.length - 1] & 0xf;
  const bin = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3];
  return String(bin % 10 ** digits).padStart(digits, '0');
}
