// Every benchmark `npm run bench` runs, in order.
import { activationBench } from './activation';
import { endToEndBench } from './endToEnd';
import { idleCost } from './idleCost';
import { memoryStore10k } from './memoryStore10k';
import { rolloutBench } from './rollout';
import { timerPrecision } from './timerPrecision';
import type { Bench } from './types';

export const BENCHES: Bench[] = [
  timerPrecision,
  idleCost,
  rolloutBench,
  memoryStore10k,
  activationBench,
  endToEndBench,
];
