// zod for every schema of the product: zod/mini (functional API, tree-shaken: the bundle keeps only
// what the schemas use), with the English issue messages that zod's full build installs by default
// ("Invalid input: expected string, received number"; ./zodMessages.ts). Without them every issue
// would read "Invalid input", and the product logs these messages (a malformed frame, a corrupt
// store record). Every schema module imports zod from here, so no entry point (the extension, the
// runner, the demo, a test) can parse without the messages.
import { config } from 'zod/mini';
import { issueMessage } from './zodMessages';

config({ localeError: issueMessage });

export * from 'zod/mini';
