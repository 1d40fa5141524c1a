/**
 * `floodgate/bottleneck`: Bottleneck 2's API on Floodgate's scheduler. Migrating is one line:
 * `import Bottleneck from 'floodgate/bottleneck'`.
 */
import { Bottleneck } from './bottleneck.js';

export { BottleneckError } from './errors.js';
export { Bottleneck };
export default Bottleneck;
