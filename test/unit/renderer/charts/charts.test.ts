import { describe, expect, it } from 'vitest';
import { niceTicks } from '../../../../src/renderer/src/charts/LineChart';
import { sparklinePoints } from '../../../../src/renderer/src/components/Live';

describe('chart geometry', () => {
  it('nice ticks cover the maximum with round steps', () => {
    expect(niceTicks(0)).toEqual([0]);
    expect(niceTicks(9.3, 4)).toEqual([0, 2.5, 5, 7.5, 10]);
    expect(niceTicks(2.0, 5)).toEqual([0, 0.5, 1, 1.5, 2]);
    expect(niceTicks(143, 4)).toEqual([0, 50, 100, 150]);
  });

  it('sparkline points span the box: time on x, rate relative to the peak on y', () => {
    const pts = sparklinePoints(
      [
        [1000, 0],
        [2000, 50],
        [3000, 100],
      ],
      100,
      30,
    ).split(' ');
    expect(pts).toEqual(['0.0,29.0', '50.0,15.0', '100.0,1.0']);
    expect(sparklinePoints([])).toBe('');
  });
});

describe('sparkline bounds', () => {
  it('keeps every point inside the box when the samples restart their clock (a clone then its checkout)', () => {
    // the shape a history record had before samples were timed from the job's start
    const samples: [number, number][] = [
      [200, 10],
      [5000, 90],
      [9000, 80],
      [100, 40],
      [350, 30],
    ];
    for (const p of sparklinePoints(samples, 100, 30).split(' ')) {
      const [x, y] = p.split(',').map(Number);
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThanOrEqual(100);
      expect(y).toBeGreaterThanOrEqual(0);
      expect(y).toBeLessThanOrEqual(30);
    }
  });
});
