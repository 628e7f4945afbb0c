import uPlot from 'uplot';
import { byId } from './dom';
import { formatClock, formatDate } from './format';

const charts = new Map<string, uPlot>();

export const PALETTE = [
  '#2563eb',
  '#db2777',
  '#16a34a',
  '#ea580c',
  '#7c3aed',
  '#0891b2',
  '#ca8a04',
  '#64748b',
];

const DAY_SECONDS = 86_400;

/** Charts follow their container's width, so a phone-width screen gets a narrower chart, not a scrollbar. */
export function drawChart(
  id: string,
  options: Omit<uPlot.Options, 'width' | 'height'>,
  data: uPlot.AlignedData,
  height = 220,
): void {
  charts.get(id)?.destroy();
  const target = byId<HTMLDivElement>(id);
  const width = Math.max(260, target.clientWidth || 600);
  charts.set(id, new uPlot({ ...options, width, height }, data, target));
}

export function removeChart(id: string): void {
  charts.get(id)?.destroy();
  charts.delete(id);
}

/** A chart time for a local date: that date's midnight in UTC, so it draws and reads as the date itself. */
export function dayTime(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 1000;
}

function dayText(time: number): string {
  return new Date(time * 1000).toISOString().slice(0, 10);
}

/**
 * The x axis of a per-day chart: whole days only, labelled by date as the page writes dates
 * (YYYY-MM-DD, no hour), and a legend that names the day.
 */
export function dayAxis(): Pick<uPlot.Options, 'tzDate'> & { x: uPlot.Series; axis: uPlot.Axis } {
  return {
    tzDate: (time) => uPlot.tzDate(new Date(time * 1000), 'Etc/UTC'),
    x: { label: 'Day', value: (_chart, time, _series, index) => latestText(_chart, 0, index, dayText, time) },
    axis: {
      space: 90,
      incrs: [1, 2, 7, 14, 28, 56, 91, 182, 364].map((days) => days * DAY_SECONDS),
      values: (_chart, splits) => splits.map(dayText),
    },
  };
}

/**
 * The x axis of a chart over hours, in the organization's time zone: the time of day, and the date
 * (YYYY-MM-DD) under the first tick of each new day (under the first tick when no day starts).
 */
export function timeAxis(): uPlot.Axis {
  const dateOf = (time: number) => formatDate(new Date(time * 1000).toISOString());
  return {
    space: 60,
    size: 50,
    // Whole minutes at least: the labels name no seconds.
    incrs: [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440].map((minutes) => minutes * 60),
    values: (_chart, splits) => {
      const dates = splits.map(dateOf);
      const newDay = dates.map((date, index) => index > 0 && date !== dates[index - 1]);
      if (!newDay.includes(true)) newDay[0] = true;
      return splits.map((time, index) =>
        newDay[index] ? `${formatClock(time)}\n${dates[index]}` : formatClock(time),
      );
    },
  };
}

/**
 * What a legend shows: the hovered point, or without a cursor the latest day of the first series
 * (today, not the projection's end), so the legend always carries figures where uPlot's own shows
 * "--" until hovered.
 */
export function latestText(
  chart: uPlot,
  seriesIndex: number,
  index: number | null,
  format: (value: number) => string,
  hovered: number | null,
): string {
  if (index !== null && index !== undefined) return hovered === null ? '—' : format(hovered);
  const first = (chart.data[1] ?? []) as (number | null | undefined)[];
  let latest = first.length - 1;
  while (latest > 0 && (first[latest] === null || first[latest] === undefined)) latest -= 1;
  const value = (chart.data[seriesIndex] as (number | null | undefined)[])[latest];
  return value === null || value === undefined ? '—' : `${format(value)} (latest)`;
}

export function legendValue(format: (value: number) => string): uPlot.Series['value'] {
  return (chart, value, seriesIndex, index) => latestText(chart, seriesIndex, index, format, value);
}
