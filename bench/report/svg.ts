// Hand-written SVG charts for bench/REPORT.md: a line chart (linear or log
// axes) and a bar timeline with vertical markers. No chart library: the
// output is plain SVG text a browser or GitHub renders.

export interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: [number, number][];
}

export interface Rule {
  value: number;
  label: string;
  color: string;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  xLog?: boolean;
  yLog?: boolean;
  /** Tick values on x (defaults: the points' x values). */
  xTicks?: number[];
  series: Series[];
  /** Horizontal reference lines (floors). */
  rules?: Rule[];
  width?: number;
  height?: number;
}

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const M = { left: 70, right: 190, top: 40, bottom: 50 };

export function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(3)}k`;
  if (a >= 100) return String(Math.round(v));
  return String(+v.toPrecision(2));
}

/** 1, 2, 5 × powers of ten covering [lo, hi]. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo / 1.0001 && v <= hi * 1.0001) out.push(v);
    }
  }
  return out;
}

function niceTicks(lo: number, hi: number, n = 5): number[] {
  const span = hi - lo || 1;
  const step0 = span / n;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0) ?? 10 * mag;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step / 1e6; v += step) out.push(+v.toPrecision(12));
  return out;
}

export function lineChart(c: LineChart): string {
  const W = c.width ?? 760;
  const H = c.height ?? 420;
  const pw = W - M.left - M.right;
  const ph = H - M.top - M.bottom;
  const xs = c.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = [...c.series.flatMap((s) => s.points.map((p) => p[1])), ...(c.rules ?? []).map((r) => r.value)].filter(
    (y) => !c.yLog || y > 0,
  );
  if (xs.length === 0 || ys.length === 0) return emptyChart(c.title, W, H);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) [x0, x1] = c.xLog ? [x0 / 2, x1 * 2] : [x0 - 1, x1 + 1];
  if (c.yLog) [y0, y1] = [10 ** Math.floor(Math.log10(y0)), 10 ** Math.ceil(Math.log10(y1))];
  else [y0, y1] = [0, y1 * 1.1 || 1];
  const sx = (x: number): number =>
    M.left + (c.xLog ? (Math.log(x) - Math.log(x0)) / (Math.log(x1) - Math.log(x0)) : (x - x0) / (x1 - x0)) * pw;
  const sy = (y: number): number =>
    M.top + ph - (c.yLog ? (Math.log(y) - Math.log(y0)) / (Math.log(y1) - Math.log(y0)) : (y - y0) / (y1 - y0)) * ph;
  const out: string[] = [header(W, H, c.title)];
  const yt = c.yLog ? logTicks(y0, y1) : niceTicks(y0, y1);
  for (const t of yt) {
    out.push(
      `<line x1="${M.left}" x2="${M.left + pw}" y1="${sy(t).toFixed(1)}" y2="${sy(t).toFixed(1)}" stroke="#e5e5e5"/>`,
    );
    out.push(
      `<text x="${M.left - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end" font-size="11" fill="#444">${fmt(t)}</text>`,
    );
  }
  for (const t of c.xTicks ?? [...new Set(xs)].sort((a, b) => a - b)) {
    out.push(
      `<line x1="${sx(t).toFixed(1)}" x2="${sx(t).toFixed(1)}" y1="${M.top}" y2="${M.top + ph}" stroke="#f0f0f0"/>`,
    );
    out.push(
      `<text x="${sx(t).toFixed(1)}" y="${M.top + ph + 16}" text-anchor="middle" font-size="11" fill="#444">${fmt(t)}</text>`,
    );
  }
  out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  out.push(`<text x="${M.left + pw / 2}" y="${H - 12}" text-anchor="middle" font-size="12">${esc(c.xLabel)}</text>`);
  out.push(
    `<text transform="translate(16 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle" font-size="12">${esc(c.yLabel)}</text>`,
  );
  let legendY = M.top + 8;
  const legend = (color: string, dashed: boolean, label: string): void => {
    out.push(
      `<line x1="${M.left + pw + 12}" x2="${M.left + pw + 36}" y1="${legendY}" y2="${legendY}" stroke="${color}" stroke-width="2"${dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    out.push(`<text x="${M.left + pw + 42}" y="${legendY + 4}" font-size="11">${esc(label)}</text>`);
    legendY += 18;
  };
  for (const r of c.rules ?? []) {
    if (c.yLog && r.value <= 0) continue;
    out.push(
      `<line x1="${M.left}" x2="${M.left + pw}" y1="${sy(r.value).toFixed(1)}" y2="${sy(r.value).toFixed(1)}" stroke="${r.color}" stroke-width="1.5" stroke-dasharray="2 3"/>`,
    );
    legend(r.color, true, r.label);
  }
  for (const s of c.series) {
    const pts = [...s.points].filter((p) => !c.yLog || p[1] > 0).sort((a, b) => a[0] - b[0]);
    if (pts.length === 0) continue;
    const d = pts.map((p, i) => `${i === 0 ? 'M' : 'L'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(' ');
    out.push(
      `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    for (const p of pts)
      out.push(
        `<circle cx="${sx(p[0]).toFixed(1)}" cy="${sy(p[1]).toFixed(1)}" r="3" fill="${s.color}"><title>${esc(s.name)}: ${fmt(p[0])} → ${fmt(p[1])}</title></circle>`,
      );
    legend(s.color, s.dashed ?? false, s.name);
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}

export interface Marker {
  at: number;
  label: string;
  color: string;
}

export interface TimelineRow {
  title: string;
  /** Bucket start times (x) and counts. */
  startX: number;
  bucket: number;
  bars: { name: string; color: string; values: number[] }[];
  markers: Marker[];
}

/** Stacked bars per time bucket, one panel per row, with vertical markers named in a key under each panel. */
export function timelineChart(title: string, xLabel: string, rows: TimelineRow[], width = 860): string {
  const panelH = 150;
  const rowH = panelH + 96;
  const W = width;
  const left = M.left;
  const pw = W - left - 30;
  const H = M.top + 16 + rows.length * rowH + 10;
  const out: string[] = [header(W, H, title)];
  // One key for the bar colours, under the title.
  let kx = left;
  for (const b of rows[0]?.bars ?? []) {
    out.push(`<rect x="${kx}" y="${M.top - 6}" width="10" height="10" fill="${b.color}"/>`);
    out.push(`<text x="${kx + 14}" y="${M.top + 3}" font-size="11">${esc(b.name)}</text>`);
    kx += 30 + 6.5 * b.name.length;
  }
  rows.forEach((row, ri) => {
    const top = M.top + 16 + ri * rowH + 20;
    const n = Math.max(...row.bars.map((b) => b.values.length));
    const x0 = row.startX;
    const x1 = row.startX + n * row.bucket;
    const totals = Array.from({ length: n }, (_, i) => row.bars.reduce((s, b) => s + (b.values[i] ?? 0), 0));
    const yTicks = niceTicks(0, Math.max(1, ...totals), 3);
    const yMax = Math.max(1, ...totals, yTicks[yTicks.length - 1] ?? 1);
    const sx = (x: number): number => left + ((x - x0) / (x1 - x0)) * pw;
    const sy = (y: number): number => top + panelH - (y / yMax) * panelH;
    out.push(`<text x="${left}" y="${top - 6}" font-size="12" font-weight="600">${esc(row.title)}</text>`);
    for (const t of yTicks) {
      out.push(
        `<line x1="${left}" x2="${left + pw}" y1="${sy(t).toFixed(1)}" y2="${sy(t).toFixed(1)}" stroke="#eee"/>`,
      );
      out.push(
        `<text x="${left - 6}" y="${(sy(t) + 4).toFixed(1)}" text-anchor="end" font-size="10" fill="#444">${fmt(t)}</text>`,
      );
    }
    const bw = Math.max(1, pw / n - 0.5);
    for (let i = 0; i < n; i++) {
      let base = 0;
      for (const b of row.bars) {
        const v = b.values[i] ?? 0;
        if (v === 0) continue;
        out.push(
          `<rect x="${sx(x0 + i * row.bucket).toFixed(1)}" y="${sy(base + v).toFixed(1)}" width="${bw.toFixed(1)}" height="${(sy(base) - sy(base + v)).toFixed(1)}" fill="${b.color}"/>`,
        );
        base += v;
      }
    }
    for (const t of niceTicks(x0, x1, 10)) {
      out.push(
        `<text x="${sx(t).toFixed(1)}" y="${top + panelH + 14}" text-anchor="middle" font-size="10" fill="#444">${fmt(t)}</text>`,
      );
    }
    out.push(
      `<text x="${left + pw}" y="${top + panelH + 28}" text-anchor="end" font-size="11" fill="#444">${esc(xLabel)}</text>`,
    );
    out.push(`<rect x="${left}" y="${top}" width="${pw}" height="${panelH}" fill="none" stroke="#999"/>`);
    // Markers: a dashed line in the panel; its name and time in the key below, in time order.
    let mx = left;
    let my = top + panelH + 46;
    for (const mk of [...row.markers].sort((a, b) => a.at - b.at)) {
      if (mk.at < x0 || mk.at > x1) continue;
      const x = sx(mk.at).toFixed(1);
      out.push(
        `<line x1="${x}" x2="${x}" y1="${top}" y2="${top + panelH}" stroke="${mk.color}" stroke-width="1.5" stroke-dasharray="4 2"><title>${esc(mk.label)}</title></line>`,
      );
      const label = `${mk.label} ${mk.at >= 0 ? '+' : ''}${mk.at.toFixed(2)} s`;
      const w = 26 + 6 * label.length;
      if (mx + w > left + pw) {
        mx = left;
        my += 14;
      }
      out.push(
        `<line x1="${mx}" x2="${mx + 14}" y1="${my - 4}" y2="${my - 4}" stroke="${mk.color}" stroke-width="2" stroke-dasharray="4 2"/>`,
      );
      out.push(`<text x="${mx + 18}" y="${my}" font-size="11" fill="${mk.color}">${esc(label)}</text>`);
      mx += w;
    }
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function header(W: number, H: number, title: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" ${FONT}>`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="600">${esc(title)}</text>`,
  ].join('\n');
}

function emptyChart(title: string, W: number, H: number): string {
  return `${header(W, H, title)}\n<text x="${W / 2}" y="${H / 2}" text-anchor="middle" font-size="13" fill="#888">no data in this run</text>\n</svg>\n`;
}
