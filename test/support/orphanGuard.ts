// Preloaded (`node --require`) into the runners a test process starts: when that test process dies
// without running its `after` (killed on a timeout, as a mutation tool does with a mutant that
// hangs), its runners are reparented, see their parent change, and end at once instead of living
// on. Nothing else: a runner whose test is alive is untouched.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 500).unref();
