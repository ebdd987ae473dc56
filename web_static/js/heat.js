// Rank activity cells from /api/heatmap, shared by the overview's heat map
// and the timeline's collapsed rank rows. A cell byte is (busy << 4) | comm,
// each in fifteenths of the cell's time, comm <= busy. Colours: idle is
// near white, compute (busy but not communicating) a blue scale and
// communication orange; blue against orange stays apart for the common
// colour-blindnesses, and lightness alone still tells idle from busy.
import { el } from './fmt.js';

const IDLE = [247, 247, 247];
const COMPUTE = [33, 102, 172];   // #2166ac
const COMM = [230, 97, 1];        // #e66101

// RGBA per cell byte, computed once: a cell is idle, compute and
// communication mixed by their shares of its time.
const LUT = new Uint32Array(256);
{
  const bytes = new DataView(LUT.buffer);   // R, G, B, A in memory order, whatever the endianness
  for (let b = 0; b < 256; b++) {
    const busy = Math.min(15, b >> 4), comm = Math.min(busy, b & 15);
    const wc = comm / 15, wb = (busy - comm) / 15, wi = 1 - wc - wb;
    const ch = (i) => Math.round(IDLE[i] * wi + COMPUTE[i] * wb + COMM[i] * wc);
    bytes.setUint32(b * 4, ((ch(0) << 24) | (ch(1) << 16) | (ch(2) << 8) | 255) >>> 0, false);
  }
}

export function decodeCells(b64) {
  const s = atob(b64), out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// Cells (decodeCells) as an offscreen canvas of cols x rows pixels, to be
// drawn stretched (drawImage) into whatever rectangle shows them.
export function heatImage(cells, rows, cols) {
  const img = new ImageData(cols, Math.max(1, rows));
  const px = new Uint32Array(img.data.buffer);
  for (let i = 0; i < rows * cols && i < cells.length; i++) px[i] = LUT[cells[i]];
  const cv = document.createElement('canvas');
  cv.width = cols;
  cv.height = Math.max(1, rows);
  cv.getContext('2d').putImageData(img, 0, 0);
  return cv;
}

export function cellShares(byte) {
  const busy = Math.min(15, byte >> 4);
  return { busy: busy / 15, comm: Math.min(busy, byte & 15) / 15 };
}

// The legend: two ramps from idle, to compute and to communication.
export function heatLegend() {
  const ramp = (to, label) => {
    const sw = el('i', { class: 'ramp' });
    sw.style.background = `linear-gradient(to right, rgb(${IDLE}), rgb(${to}))`;
    return el('span', {}, sw, label);
  };
  return el('div', { class: 'legend heat-legend' }, el('span', {}, 'idle '), ramp(COMPUTE, ' compute (GPU busy)'),
    ramp(COMM, ' communication'),
    el('span', {}, el('i', { class: 'tick straggler' }), 'straggler'),
    el('span', {}, el('i', { class: 'tick late' }), 'late ranks'));
}
