// Every benchmark `npm run bench` runs, in order.
import type { Bench } from './types';
import { rolloutBench } from './rollout';

export const BENCHES: Bench[] = [
  rolloutBench,
];
