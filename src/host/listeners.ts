// Who wants to hear that a service's state changed: each listener gets a handle to stop.

export class Listeners {
  private readonly set = new Set<() => void>();

  add(listener: () => void): { dispose(): void } {
    this.set.add(listener);
    return { dispose: () => this.set.delete(listener) };
  }

  fire(): void {
    for (const l of this.set) l();
  }

  clear(): void {
    this.set.clear();
  }
}
