// One colour per agent: an agent keeps its hashed colour across pages unless another agent on the
// same page already holds it. Red is kept for errors, so no agent is red.

export const PALETTE = [
  "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#17becf", "#9c755f",
  "#bcbd22", "#e377c2", "#2f4b7c", "#1b7f7a", "#d4a017", "#7f7f7f",
];
export const NEUTRAL = "#9aa3ad";

function hash(text) {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  return h >>> 0;
}

/** A colour map for the agents of one page, in the order given. */
export class AgentColors {
  constructor(agents = []) {
    this.map = new Map();
    this.used = new Set();
    for (const a of agents) this.get(a);
  }

  get(agent) {
    if (agent === null || agent === undefined || agent === "") return NEUTRAL;
    const key = String(agent);
    let colour = this.map.get(key);
    if (colour) return colour;
    const start = hash(key) % PALETTE.length;
    for (let i = 0; i < PALETTE.length; i++) {
      const candidate = PALETTE[(start + i) % PALETTE.length];
      if (!this.used.has(candidate) || this.used.size >= PALETTE.length) {
        colour = candidate;
        break;
      }
    }
    this.map.set(key, colour);
    this.used.add(colour);
    return colour;
  }

  entries() {
    return [...this.map.entries()];
  }
}
