// The election's generations, its fence against its own past: every start and every stop begins
// a new generation, and work begun in an older one (an attempt, a term being begun, a lost leader's
// re-election) gives up at its next step. A generation is only ever compared for identity: it is
// a token, not a count. The election itself (election.ts) asks these rules; they hold no I/O.

/** One generation of an election: the work begun in it carries it. */
export class Generation {}

/** Whether this instance leads or follows right now. */
export interface Seat {
  leading: boolean;
  following: boolean;
}

export class Generations {
  private latest = new Generation();

  /** The generation now: work begun now belongs to it. */
  get now(): Generation {
    return this.latest;
  }

  /** A start or a stop: a new generation begins, and the work of every older one gives up. */
  begin(): Generation {
    this.latest = new Generation();
    return this.latest;
  }

  /** Work of `gen` is still wanted: no start or stop came since it began. */
  current(gen: Generation): boolean {
    return gen === this.latest;
  }

  /**
   * Whether work of `gen` that found itself without a leader (the leader lost, gone silent, or
   * this one stepped down) elects again now: only while `gen` is current, and only while this
   * instance neither leads nor follows (an election finishing meanwhile may have settled it).
   */
  electsAgain(gen: Generation, seat: Seat): boolean {
    return this.current(gen) && !seat.leading && !seat.following;
  }
}
