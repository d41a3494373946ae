/**
 * The canonical conversation and answers every native provider is tested with: each provider's
 * mock renders the same answers in its own wire format, so the OpenAI results must be equal.
 */
export const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
} as const;

/** System prompt, a tool round trip, and a follow-up question. */
export function conversation(model: string): Record<string, unknown> {
  return {
    model,
    messages: [
      { role: 'system', content: 'You are a weather bot.' },
      { role: 'user', content: 'What is the weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_paris', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_paris', content: '{"temp_c":18}' },
      { role: 'assistant', content: 'It is 18°C in Paris.' },
      { role: 'user', content: 'And in Rome and Milan?' },
    ],
    tools: [WEATHER_TOOL],
  };
}

export const TEXT_ANSWER = { text: 'It is 18°C in Paris.', pieces: ['It is ', '18°C in ', 'Paris.'], prompt: 20, completion: 8 };

export const TOOL_ANSWER = {
  calls: [
    { name: 'get_weather', arguments: '{"city":"Rome"}', pieces: ['{"city":', '"Rome"}'] },
    { name: 'get_weather', arguments: '{"city":"Milan"}', pieces: ['{"ci', 'ty":"Milan"}'] },
  ],
  prompt: 30,
  completion: 12,
};

/** A 1x1 PNG. */
export const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
