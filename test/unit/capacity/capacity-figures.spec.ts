import { budgetFigures } from '../../../src/capacity/capacity-figures';
import { round4 } from '../../../src/common/http/decimal';

const now = new Date('2026-11-20T10:00:00.000Z');
const period = { start: new Date('2026-11-01T00:00:00.000Z'), end: new Date('2027-01-01T00:00:00.000Z') };

describe('round4', () => {
  it('keeps at most 4 decimals and no negative zero', () => {
    expect(round4(1.23456)).toBe(1.2346);
    expect(round4(-0.00001)).toBe(0);
    expect(Object.is(round4(-0.00001), -0)).toBe(false);
    expect(round4(12)).toBe(12);
  });
});

describe('budgetFigures', () => {
  it('derives remaining, burn rate and the exhaustion date from the figures as shown', () => {
    expect(budgetFigures(100, 30, 14, now, period)).toEqual({
      allocated_gpu_hours: 100,
      used_gpu_hours: 30,
      remaining_gpu_hours: 70,
      burn_rate_gpu_hours_per_day: 2,
      projected_exhaustion_date: '2026-12-25T10:00:00.000Z',
      budget_status: 'at_risk',
    });
  });

  it('is on track when the projection lies after the period end, exhausted when nothing remains', () => {
    expect(budgetFigures(100, 30, 7, now, period)).toMatchObject({
      projected_exhaustion_date: '2027-01-29T10:00:00.000Z',
      budget_status: 'on_track',
    });
    expect(budgetFigures(100, 100, 7, now, period).budget_status).toBe('exhausted');
    expect(budgetFigures(0, 0.5, 7, now, period).budget_status).toBe('exhausted');
    expect(budgetFigures(0, 0, 0, now, period).budget_status).toBe('on_track');
    expect(budgetFigures(100, 5, 0, now, period).budget_status).toBe('on_track');
  });

  it('says now when the budget is used up or overrun, while still burning', () => {
    expect(budgetFigures(10, 25, 7, now, period)).toMatchObject({
      remaining_gpu_hours: -15,
      projected_exhaustion_date: now.toISOString(),
    });
  });

  it('projects nothing when nothing is allocated or nothing burns', () => {
    expect(budgetFigures(0, 5, 7, now, period).projected_exhaustion_date).toBeNull();
    expect(budgetFigures(100, 5, 0, now, period).projected_exhaustion_date).toBeNull();
    expect(budgetFigures(100, 5, 0.0001, now, period).projected_exhaustion_date).toBeNull();
  });

  it('projects nothing beyond year 9999', () => {
    expect(budgetFigures(1e12, 0, 0.007, now, period).projected_exhaustion_date).toBeNull();
  });

  it('burns a period still ahead from its start, and projects nothing once the period has ended', () => {
    const ahead = { start: new Date('2026-12-01T00:00:00.000Z'), end: new Date('2027-01-01T00:00:00.000Z') };
    expect(budgetFigures(100, 0, 140, now, ahead)).toMatchObject({
      projected_exhaustion_date: '2026-12-06T00:00:00.000Z',
      budget_status: 'at_risk',
    });
    const ended = { start: new Date('2026-10-01T00:00:00.000Z'), end: new Date('2026-11-01T00:00:00.000Z') };
    expect(budgetFigures(100, 40, 140, now, ended)).toMatchObject({
      projected_exhaustion_date: null,
      budget_status: 'on_track',
    });
    expect(budgetFigures(100, 100, 140, now, ended).budget_status).toBe('exhausted');
  });
});
