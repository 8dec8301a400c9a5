// A free loopback port for a child process or a listener that must be told its port
// beforehand: bench/procs.ts freePort() (drawn below the kernel's ephemeral range; it may
// still be taken again before the caller binds it).
export { freePort } from '../../bench/procs.js';
