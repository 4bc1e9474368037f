import Foundation

/// A plain SVG bar chart of the ratios, so that readers see the comparison at a
/// glance: how many times faster than Foundation each row is, and how close to the
/// floor (both on logarithmic scales).
enum Chart {
    static func svg(_ rows: [BenchRow], machine: String) -> String {
        // A row's static build gets bars of its own, after the row's.
        let rows = rows.flatMap { row in [row] + (row.staticBuildRow.map { [$0] } ?? []) }
        let faster = rows.compactMap { row in row.foundationRatio.map { (row.name, $0) } }
        // get_foundation_sync has the same "ours" as get: its floor bar would repeat get's.
        let floor = rows.filter { $0.name != "get_foundation_sync" }.compactMap { row in row.floorRatio.map { (row.name, $0) } }
        let barHeight = 18, gap = 6, left = 170, width = 760
        // The longest bar, with its label, fits the width.
        let largest = (faster + floor).map { log10(max($0.1, 1)) }.max() ?? 1
        let scale = Double(width - left - 70) / max(largest, 1)
        var y = 72
        var body = ""
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        }
        func panel(_ title: String, _ bars: [(String, Double)], color: String, label: (Double) -> String) {
            body += "<text x=\"10\" y=\"\(y)\" font-weight=\"bold\">\(escape(title))</text>\n"
            y += 12
            for (name, ratio) in bars {
                let length = max(2, Int(log10(max(ratio, 1)) * scale))
                body += "<text x=\"\(left - 8)\" y=\"\(y + 13)\" text-anchor=\"end\">\(escape(name))</text>\n"
                body += "<rect x=\"\(left)\" y=\"\(y)\" width=\"\(length)\" height=\"\(barHeight)\" fill=\"\(color)\"/>\n"
                body += "<text x=\"\(left + length + 6)\" y=\"\(y + 13)\">\(escape(label(ratio)))</text>\n"
                y += barHeight + gap
            }
            y += 24
        }
        panel("How many times faster than Foundation's UserDefaults (log scale)", faster, color: "#2f7d4f") { String(format: "%.1f×", $0) }
        panel("How many times the bare system-call floor (log scale; 1× is the floor)", floor, color: "#3b6ea8") { String(format: "%.1f×", $0) }
        // With --peers: ours beside each peer, both ways from 1× (right: ours is better).
        func peerPanel(_ peer: Peer, _ bars: [(String, Double)]) {
            body += "<text x=\"10\" y=\"\(y)\" font-weight=\"bold\">\(escape("Ours beside \(peer.title) (log scale; right: ours is better, left: \(peer.title) is)"))</text>\n"
            y += 12
            let middle = left + (width - left) / 2
            let half = Double((width - left) / 2 - 90) / max(bars.map { abs(log10($0.1)) }.max() ?? 1, 1)
            body += "<line x1=\"\(middle)\" y1=\"\(y)\" x2=\"\(middle)\" y2=\"\(y + bars.count * (barHeight + gap))\" stroke=\"#888\"/>\n"
            for (name, ratio) in bars {
                let length = max(2, Int(abs(log10(ratio)) * half))
                let better = ratio >= 1
                let x = better ? middle : middle - length
                let label = better ? String(format: "%.1f× better", ratio) : String(format: "%.1f× worse", 1 / ratio)
                body += "<text x=\"\(left - 8)\" y=\"\(y + 13)\" text-anchor=\"end\">\(escape(name))</text>\n"
                body += "<rect x=\"\(x)\" y=\"\(y)\" width=\"\(length)\" height=\"\(barHeight)\" fill=\"\(better ? "#2f7d4f" : "#b5473a")\"/>\n"
                body += better ? "<text x=\"\(middle + length + 6)\" y=\"\(y + 13)\">\(escape(label))</text>\n"
                    : "<text x=\"\(middle - length - 6)\" y=\"\(y + 13)\" text-anchor=\"end\">\(escape(label))</text>\n"
                y += barHeight + gap
            }
            y += 24
        }
        for peer in Peer.allCases {
            let bars = rows.filter { $0.name != "get_foundation_sync" }.compactMap { row in
                row.peers?.first { $0.peer == peer }.flatMap { row.peerRatio($0) }.map { (row.name, $0) }
            }
            if !bars.isEmpty { peerPanel(peer, bars) }
        }
        let height = y + 10
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="24" font-size="15" font-weight="bold">suite-bench: medians, side by side in one run</text>
            <text x="10" y="40" fill="#555">\(escape(machine))</text>
            \(body)</svg>

            """
    }
}
