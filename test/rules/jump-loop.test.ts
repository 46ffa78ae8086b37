import { jumpLoop } from '../../src/rules/jump-loop.js';
import { testRule } from './rule-tester.js';

testRule(jumpLoop, {
  valid: [
    { name: 'a diamond of jumps', code: 'table ip t {\n\tchain a { jump b; jump c }\n\tchain b { jump d }\n\tchain c { jump d }\n\tchain d { }\n}\n' },
    { name: 'same chain names in two tables', code: 'table ip t {\n\tchain a { jump b }\n\tchain b { }\n}\ntable ip u {\n\tchain b { jump a }\n\tchain a { }\n}\n' },
  ],
  invalid: [
    {
      name: 'a chain that jumps to itself',
      code: 'table ip t {\n\tchain a {\n\t\tjump a\n\t}\n}\n',
      errors: [{ messageId: 'loop', line: 3, column: 3, related: 0, message: "jump to 'a' closes a loop: a → a" }],
    },
    {
      name: 'a three-chain loop through a goto and a verdict map',
      code: 'table ip t {\n\tchain a {\n\t\tjump b\n\t}\n\tchain b {\n\t\ttcp dport vmap { 22 : goto c }\n\t}\n\tchain c {\n\t\tjump a\n\t}\n}\n',
      errors: [{ messageId: 'loop', line: 9, column: 3, related: 2, message: 'a → b → c → a' }],
    },
  ],
});
