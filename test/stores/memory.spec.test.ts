import { describe } from 'vitest';
import { memoryStore } from '../../src/index.js';
import { runSpecification } from '../algorithms/run-spec.js';

describe('specification on the memory store (fake clock)', () => {
  runSpecification((clock) => memoryStore({ clock }), 'spec');
});
