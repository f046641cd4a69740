import { describe, expect, it } from 'vitest';
import { CloseGuard } from '../../../src/main/host/close-guard';

function setup(transferring: boolean) {
  const answers: ((yes: boolean) => void)[] = [];
  let closed = 0;
  const state = { transferring };
  const guard = new CloseGuard({
    transferring: () => state.transferring,
    confirm: () => new Promise<boolean>((r) => answers.push(r)),
    close: () => void closed++,
  });
  return { guard, answers, state, closed: () => closed };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('CloseGuard', () => {
  it('lets the window close without asking when no transfer runs', () => {
    const { guard, answers } = setup(false);
    expect(guard.onClose()).toBe(true);
    expect(answers).toHaveLength(0);
  });

  it('asks once while a transfer runs, and keeps the window when the user says no', async () => {
    const { guard, answers, closed } = setup(true);
    expect(guard.onClose()).toBe(false);
    expect(guard.onClose()).toBe(false);
    expect(answers).toHaveLength(1);
    answers[0]!(false);
    await tick();
    expect(closed()).toBe(0);
    // the next close asks again
    expect(guard.onClose()).toBe(false);
    expect(answers).toHaveLength(2);
  });

  it('closes the window when the user confirms, and lets that close through', async () => {
    const { guard, answers, closed } = setup(true);
    expect(guard.onClose()).toBe(false);
    answers[0]!(true);
    await tick();
    expect(closed()).toBe(1);
    expect(guard.onClose()).toBe(true);
    expect(answers).toHaveLength(1);
  });

  it('does not ask once the transfer ended', () => {
    const { guard, state, answers } = setup(true);
    state.transferring = false;
    expect(guard.onClose()).toBe(true);
    expect(answers).toHaveLength(0);
  });
});
