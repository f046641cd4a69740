// A stand-in engine worker for EngineWorkerHost's tests: each job behaves as its request.repo says.
import { parentPort } from 'node:worker_threads';

const log = (jobId, message) => ({
  type: 'events',
  jobId,
  events: [{ type: 'log', jobId, time: Date.now(), level: 'info', message }],
});

parentPort.on('message', (m) => {
  if (m.type !== 'start') {
    parentPort.postMessage(log(m.jobId, JSON.stringify(m)));
    return;
  }
  const { jobId, request } = m;
  const mode = request.repo;
  if (mode === '/ok') {
    parentPort.postMessage(log(jobId, 'hi'));
    parentPort.postMessage({ type: 'finished', jobId, ok: true });
  } else if (mode === '/throw') {
    setTimeout(() => {
      throw new Error('boom in the engine');
    }, 0);
  } else if (mode === '/echo') {
    // answered by the generic handler above
  } else if (mode === '/spin') {
    // Ignores everything, like an engine stuck in a loop: only terminate() ends it.
    parentPort.postMessage(log(jobId, 'spinning'));
    for (;;);
  } else if (mode === '/alloc') {
    const hog = [];
    for (;;) hog.push(new Array(1e6).fill(Math.random()));
  }
});
