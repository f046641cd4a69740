// A stand-in engine worker for EngineWorkerHost's tests: behaves as workerData.request.repo says.
import { parentPort, workerData } from 'node:worker_threads';

const { jobId, request } = workerData;
const mode = request.repo;
if (mode === '/ok') {
  parentPort.postMessage({ type: 'events', events: [{ type: 'log', jobId, time: Date.now(), level: 'info', message: 'hi' }] });
  parentPort.postMessage({ type: 'finished', ok: true });
} else if (mode === '/throw') {
  setTimeout(() => {
    throw new Error('boom in the engine');
  }, 0);
} else if (mode === '/echo') {
  parentPort.on('message', (m) => {
    parentPort.postMessage({ type: 'events', events: [{ type: 'log', jobId, time: Date.now(), level: 'info', message: JSON.stringify(m) }] });
  });
} else if (mode === '/spin') {
  // Ignores everything, like an engine stuck in a loop: only terminate() ends it.
  parentPort.postMessage({ type: 'events', events: [{ type: 'log', jobId, time: Date.now(), level: 'info', message: 'spinning' }] });
  for (;;);
} else if (mode === '/alloc') {
  const hog = [];
  for (;;) hog.push(new Array(1e6).fill(Math.random()));
}
