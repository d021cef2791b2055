// What the dashboard's uPlot charts share about their axes: each y axis as
// wide as its longest label (uPlot's fixed 50 px cut "80 GiB" off at the
// right edge), and axis text in the page's own text colour, so a chart
// follows the theme as the page around it does.
import uPlot from 'uplot';

/** An axis's size: its ticks, its gap and its widest label, measured in the axis's own font. */
export function fitAxis(self: uPlot, values: string[] | null, axisIdx: number, cycleNum: number): number {
  const axis = self.axes[axisIdx]!;
  // uPlot sizes its axes in cycles; after the first two it keeps what it has, so the layout settles.
  const kept = (axis as { _size?: number })._size;
  if (cycleNum > 1 && kept) return kept;
  let size = (axis.ticks?.size ?? 10) + (axis.gap ?? 5);
  const widest = (values ?? []).reduce((a, v) => (v.length > a.length ? v : a), '');
  if (widest) {
    // Inside uPlot an axis's font is [css font, size]; its canvas is scaled by the device's pixel ratio.
    self.ctx.font = (axis.font as unknown as [string])[0];
    size += self.ctx.measureText(widest).width / (window.devicePixelRatio || 1);
  }
  return Math.ceil(size) + 2;
}

/**
 * Axis labels: a dark grey, as on a light page. In the dark theme every chart's canvas is turned over
 * (app/dark.css), which makes it light there: one colour for both, never the page's own (that would be turned over too).
 */
export const AXIS_TEXT = '#52525b';

/** Grid and tick lines: a grey that shows on a light or a dark page. */
export const GRID = { stroke: 'rgba(128, 128, 128, 0.18)', width: 1 };

/**
 * Draws a uPlot chart in `el` at the element's width and `height`, redrawn at the new width whenever the element's
 * width changes; returns what takes it down again (a React effect's cleanup).
 */
export function mountChart(el: HTMLElement, height: number, opts: Omit<uPlot.Options, 'width' | 'height'>, data: uPlot.AlignedData): () => void {
  const plot = new uPlot({ ...opts, width: el.clientWidth || 600, height }, data, el);
  const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth, height }));
  resize.observe(el);
  return () => {
    resize.disconnect();
    plot.destroy();
  };
}
