/** POST /v1/files (multipart/form-data): a file and its purpose, as OpenAI takes them. */
import type { FormSummary } from '../endpoint.ts';
import { checkForm } from './form.ts';

export const FILE_PURPOSES = ['assistants', 'batch', 'fine-tune', 'vision', 'user_data', 'evals'] as const;

export function checkFileUploadForm(form: FormSummary): void {
  checkForm(form, { files: { file: { required: true } }, fields: { purpose: { required: true, oneOf: FILE_PURPOSES } } });
}
