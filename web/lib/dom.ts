import { formatMoney, formatNumber, gpuText, type GpuHolding } from './format';

export const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

export function showMessage(text: string | null): void {
  const message = byId<HTMLParagraphElement>('message');
  message.textContent = text ?? '';
  message.hidden = text === null;
}

export function figure(id: string, value: number | undefined, label: string, digits = 1): HTMLElement {
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = String(value ?? '');
  strong.textContent = formatNumber(value, digits);
  strong.title = label;
  return strong;
}

/**
 * The money beside GPU-hours in a summary sentence, only where the organization has prices; with
 * `budget`, what the allocations are worth beside it.
 */
export function costSentence(
  id: string,
  amount: string | null | undefined,
  currency: string | null | undefined,
  unpriced: number | null | undefined,
  budget?: string | null,
): (string | HTMLElement)[] {
  if (!currency || amount === null || amount === undefined) return [];
  const strong = document.createElement('strong');
  strong.id = id;
  strong.dataset.value = amount;
  strong.textContent = formatMoney(amount, currency);
  const of = budget ? ` of the ${formatMoney(budget, currency)} allocated` : '';
  const rest = unpriced ? ` (${formatNumber(unpriced)} GPU-hours without a price not included)` : '';
  return [' They cost ', strong, `${of}${rest}.`];
}

/** A cell that shows a rounded figure and keeps the API's exact one for whoever checks it. */
export function cell(text: string, value?: number | string | null, className?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (value !== undefined) td.dataset.value = value === null ? '' : String(value);
  if (className) td.className = className;
  return td;
}

export function gpuCell(holding: GpuHolding): HTMLTableCellElement {
  const td = cell(gpuText(holding), holding.gpu_share ?? holding.gpu_count ?? null, 'number');
  td.dataset.sharing = holding.gpu_sharing?.mode ?? 'whole';
  return td;
}

export function statusBadge(status = 'on_track'): HTMLTableCellElement {
  const td = cell(status.replace('_', ' '), status, `status status-${status}`);
  return td;
}

/**
 * The first cell of a row that opens something: the row's name as a button, so the keyboard reaches
 * it; a click anywhere on the row does the same (see opensOnClick).
 */
export function openerCell(text: string, label: string, value: string): HTMLTableCellElement {
  const td = cell('', value);
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'opener';
  button.textContent = text;
  button.setAttribute('aria-label', label);
  td.append(button);
  return td;
}

/** A click anywhere on the row (its button's included, which bubbles here) opens what the button names. */
export function opensOnClick(tableRow: HTMLTableRowElement, open: () => void): HTMLTableRowElement {
  tableRow.classList.add('opens');
  tableRow.addEventListener('click', (event) => {
    if ((event.target as Element).closest('a')) return;
    open();
  });
  return tableRow;
}

export function row(
  cells: HTMLTableCellElement[],
  attributes: Record<string, string> = {},
): HTMLTableRowElement {
  const tr = document.createElement('tr');
  for (const [name, value] of Object.entries(attributes)) tr.dataset[name] = value;
  tr.append(...cells);
  return tr;
}

export function fillTable(id: string, rows: HTMLTableRowElement[]): void {
  const table = byId<HTMLTableElement>(id);
  table.tBodies[0].replaceChildren(...labelled(table, rows));
}

/**
 * Each cell carries its column's header as `data-label`: at phone width the rows stack as cards and
 * every figure shows beside its name instead of in a column scrolled out of sight.
 */
export function labelled(table: HTMLTableElement, rows: HTMLTableRowElement[]): HTMLTableRowElement[] {
  const headers = [...(table.tHead?.rows[0]?.cells ?? [])].map((header) =>
    header.querySelector('.visually-hidden') ? '' : (header.textContent ?? '').trim(),
  );
  for (const tableRow of rows) {
    [...tableRow.cells].forEach((tableCell, index) => {
      tableCell.dataset.label = tableRow.cells.length === 1 ? '' : (headers[index] ?? '');
    });
  }
  return rows;
}
