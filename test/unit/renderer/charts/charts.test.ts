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
