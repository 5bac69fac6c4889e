import { render } from 'preact';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/client';
import { ErrorBox } from './ErrorBox';

describe('ErrorBox', () => {
  it('shows the message and a hint, or nothing', () => {
    const el = document.createElement('div');
    render(<ErrorBox error={new ApiError('no_store', 'this node has no search store', 503)} />, el);
    expect(el.querySelector('[role=alert]')?.textContent).toBe(
      'this node has no search store — This node has no search store configured.',
    );
    render(<ErrorBox error={null} />, el);
    expect(el.innerHTML).toBe('');
  });
});
