/// Rows whose figures are compared with each other (ours, the floor, the peers) are
/// measured in turns: each contender takes a share of its samples, then the next
/// contender does, round after round. On a shared machine that runs in fast and slow
/// spells, from milliseconds to seconds long, a spell then falls on every contender
/// alike, where measuring one after the other put it on whoever ran during it, and a
/// ratio of two figures moved with the spell rather than with the code.
struct Turns {
    /// Who takes a turn.
    enum Contender: Hashable {
        case ours, foundation, floor, systemCalls
        case peer(Peer)
    }

    /// How many turns each contender takes: many short ones for the rows measured in
    /// this process (a turn of a `set` row is about a millisecond), a few for rows
    /// whose every turn starts processes.
    let rounds: Int

    init(rounds: Int = 40) {
        self.rounds = rounds
    }

    /// Each contender's measurement of the samples whose indices it is given.
    private var contenders: [(Contender, (Range<Int>) throws -> Samples)] = []

    /// Adds a contender; it measures one sample per index it is given (a write's
    /// index chooses the key and value, so that every write changes something).
    mutating func add(_ contender: Contender, _ measure: @escaping (Range<Int>) throws -> Samples) {
        contenders.append((contender, measure))
    }

    /// Each contender's `count` samples, measured in `rounds` turns over consecutive
    /// parts of `0..<count`, in the order the contenders were added.
    func run(_ count: Int) throws -> [Contender: Samples] {
        var samples: [Contender: Samples] = [:]
        let rounds = max(1, min(self.rounds, count))
        for round in 0..<rounds {
            let part = (count * round / rounds)..<(count * (round + 1) / rounds)
            for (contender, measure) in contenders {
                samples[contender, default: Samples()].add(contentsOf: try measure(part).values)
            }
        }
        return samples
    }
}
