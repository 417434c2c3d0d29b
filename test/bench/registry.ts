// Every benchmark `npm run bench` runs, in order.
import type { Bench } from './types';

export const BENCHES: Bench[] = [
];
