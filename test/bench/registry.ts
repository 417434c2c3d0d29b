// Every benchmark `npm run bench` runs, in order.
import { activationBench } from './activation';
import { endToEndBench } from './endToEnd';
import type { Bench } from './types';

export const BENCHES: Bench[] = [
  activationBench,
  endToEndBench,
];
