// The product's version, from package.json (bundled by esbuild, read by tsc builds).
import { version } from '../package.json';

export const VERSION: string = version;
