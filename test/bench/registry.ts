// Every benchmark `npm run bench` runs, in order.
import { activationBench } from './activation';
import { endToEndBench } from './endToEnd';
import { homeScanBench } from './homeScan';
import { idleCost } from './idleCost';
import { memoryStore10k } from './memoryStore10k';
import { outageCost } from './outageCost';
import { rolloutBench } from './rollout';
import { soakBench } from './soak';
import { stallTakeover } from './stallTakeover';
import { timerPrecision } from './timerPrecision';
import type { Bench } from './types';
import { writeAheadBench } from './writeAhead';

// The most timing-sensitive last, when the disk-heavy ones are done.
export const BENCHES: Bench[] = [
  rolloutBench,
  memoryStore10k,
  writeAheadBench,
  activationBench,
  endToEndBench,
  stallTakeover,
  idleCost,
  homeScanBench,
  outageCost,
  timerPrecision,
  soakBench,
];
