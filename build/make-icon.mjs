// Draws Sluice's app icon (512x512 PNG, build/icon.png) without any image library: a rounded
// square in deep blue with a sluice gate (two posts, a lifted gate) over three waves of water.
// electron-builder derives the Windows .ico and macOS .icns from this PNG at packaging time.
// Run: node build/make-icon.mjs
import { writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const S = 512;
const px = Buffer.alloc(S * S * 4);

function blend(x, y, [r, g, b], a) {
  if (x < 0 || y < 0 || x >= S || y >= S || a <= 0) return;
  const i = (y * S + x) * 4;
  const k = Math.min(1, a);
  const da = px[i + 3] / 255;
  const oa = k + da * (1 - k);
  px[i] = Math.round((r * k + px[i] * da * (1 - k)) / (oa || 1));
  px[i + 1] = Math.round((g * k + px[i + 1] * da * (1 - k)) / (oa || 1));
  px[i + 2] = Math.round((b * k + px[i + 2] * da * (1 - k)) / (oa || 1));
  px[i + 3] = Math.round(oa * 255);
}

/** Fills where `inside(x, y)` is true, 4x4 supersampled for smooth edges. */
function fill(inside, color, bbox = [0, 0, S, S]) {
  const [x0, y0, x1, y1] = bbox;
  for (let y = Math.max(0, Math.floor(y0)); y < Math.min(S, Math.ceil(y1)); y++) {
    for (let x = Math.max(0, Math.floor(x0)); x < Math.min(S, Math.ceil(x1)); x++) {
      let n = 0;
      for (let sy = 0; sy < 4; sy++)
        for (let sx = 0; sx < 4; sx++) if (inside(x + (sx + 0.5) / 4, y + (sy + 0.5) / 4)) n++;
      if (n) blend(x, y, color, n / 16);
    }
  }
}

const roundedRect = (x0, y0, x1, y1, r) => (x, y) => {
  if (x < x0 || x > x1 || y < y0 || y > y1) return false;
  const cx = Math.min(Math.max(x, x0 + r), x1 - r);
  const cy = Math.min(Math.max(y, y0 + r), y1 - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
};

// Background: rounded square with a vertical gradient (drawn as bands).
const bg = roundedRect(24, 24, 488, 488, 96);
for (let band = 0; band < 464; band += 2) {
  const t = band / 464;
  const color = [Math.round(28 + 10 * t), Math.round(64 + 40 * t), Math.round(140 + 50 * t)];
  fill((x, y) => bg(x, y) && y >= 24 + band && y < 26 + band, color, [24, 24 + band, 488, 26 + band]);
}

// Water: three waves below the gate.
const wave = (yBase, amp, phase) => (x, y) =>
  bg(x, y) &&
  y >= yBase + amp * Math.sin((x / 512) * Math.PI * 4 + phase) &&
  y <= yBase + 22 + amp * Math.sin((x / 512) * Math.PI * 4 + phase);
fill(wave(330, 10, 0), [120, 200, 255]);
fill(wave(375, 10, 1.3), [96, 180, 245]);
fill(wave(420, 10, 2.6), [72, 160, 235]);

// The sluice: two posts and a lifted gate between them, with the opening below it.
const white = [245, 248, 252];
fill(roundedRect(120, 96, 168, 330, 12), white);
fill(roundedRect(344, 96, 392, 330, 12), white);
fill(roundedRect(104, 84, 408, 118, 14), white);
fill(roundedRect(176, 150, 336, 250, 10), [210, 226, 245]);
for (const y of [178, 206]) fill(roundedRect(190, y, 322, y + 8, 4), [150, 180, 220]);

// PNG encoding: RGBA, filter 0 on every row.
const raw = Buffer.alloc(S * (S * 4 + 1));
for (let y = 0; y < S; y++) px.copy(raw, y * (S * 4 + 1) + 1, y * S * 4, (y + 1) * S * 4);
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (buf) => {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(S, 0);
ihdr.writeUInt32BE(S, 4);
ihdr[8] = 8; // bit depth
ihdr[9] = 6; // RGBA
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk('IHDR', ihdr),
  chunk('IDAT', deflateSync(raw, { level: 9 })),
  chunk('IEND', Buffer.alloc(0)),
]);
const out = new URL('./icon.png', import.meta.url);
writeFileSync(out, png);
console.log(`wrote ${out.pathname} (${png.length} bytes)`);
