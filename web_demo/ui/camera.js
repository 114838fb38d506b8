// The camera button of the image input: start/stop the stream, capture a frame (hidden without getUserMedia).
import { $, setStatus } from './dom.js';

// onFrame(video, width, height): a captured frame.
export function setupCamera(onFrame) {
  if (!(navigator.mediaDevices && navigator.mediaDevices.getUserMedia)) return; // stays hidden
  const video = $('video');
  const shown = (on) => {
    video.hidden = !on; $('snap').hidden = !on; $('camera').textContent = on ? 'Stop camera' : 'Use camera';
  };
  $('camera').hidden = false;
  const camera = { stream: null };
  $('camera').addEventListener('click', async () => {
    if (camera.stream) {
      camera.stream.getTracks().forEach((t) => t.stop());
      camera.stream = null;
      shown(false);
      return;
    }
    try {
      camera.stream = await navigator.mediaDevices.getUserMedia({ video: { facingMode: 'environment' }, audio: false });
    } catch (err) {
      setStatus(`Camera unavailable: ${err.message}`, true);
      return;
    }
    video.srcObject = camera.stream;
    await video.play();
    shown(true);
  });
  $('snap').addEventListener('click', () => onFrame(video, video.videoWidth, video.videoHeight));
}
