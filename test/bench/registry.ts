// Every benchmark `npm run bench` runs, in order.
import { timerPrecision } from './timerPrecision';
import type { Bench } from './types';

export const BENCHES: Bench[] = [
  timerPrecision,
];
